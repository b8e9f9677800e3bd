# SPDX-License-Identifier: Apache-2.0
"""The mount section of docs/performance.md (scripts/report.py calls it),
from measure_mount.py's measurements, with the mount's targets."""


from report_serve import _met, _mm  # one formatting for every section


def mount_section(m, rel_path):
    if not m:
        return ("Not measured yet: run `scripts/measure-mount.sh`, which writes "
                "`docs/measurements/mount-DATE.json`, then `python3 scripts/report.py`.")
    seq, rnd = m["seq_x_cat"], m["random_4k_fuse_p50_us"]
    return "\n".join([
        f"Measured {m['date']} at commit {m['commit']}, {m['rounds']} rounds, {m['nproc']} cores, a "
        f"{m['size_mib']} MiB pseudo-random object on a directory store. Source: `{rel_path}`. Method: "
        "`cat` of the file from the mount point and `chunkstore cat` of the same object, both fresh processes "
        "to /dev/null with the packs in the page cache, alternating which goes first (ratio per round, cat "
        "time / mount time; the mounted file's own page cache dropped before each, so every byte comes "
        "through FUSE and the verified reader, and after it" + (", as the other mount's" if "seq_x_base" in m else "")
        + ", so every read starts with the same memory in use); 4 KiB reads at random aligned offsets in the first 32 MiB "
        "without kernel read-ahead, after a pass that warmed the store's chunk cache and with the file's page "
        "cache dropped, so each goes to the daemon, then the same reads from the page cache."
        + _read_ahead(m), "",
        "| measure | target | measured | |", "|---|---|---|---|",
        f"| sequential read through the mount | ≥ 0.7× `chunkstore cat` | {_mm(seq)}× "
        f"(mount {_mm(m['seq_mount_ms'], 0)} ms, cat {_mm(m['seq_cat_ms'], 0)} ms) | "
        f"{_met(seq['median'] >= 0.7)} |",
        f"| 4 KiB random reads through FUSE, warm, p50 | ≤ 50 µs | {_mm(rnd, 1)} µs | "
        f"{_met(rnd['median'] <= 50)} |",
        f"| the same from the page cache (reference) | | {_mm(m['random_4k_page_cache_p50_us'], 1)} µs | |",
    ] + _half_lines(m) + _first_read_lines(m) + _base_lines(m) + _cpu_lines(m))


def _half_lines(m):
    if "half_x_cat" not in m:
        return []
    return [
        "| reference: the second half read in order from the middle (`dd bs=1M skip=...` from the mount point) | "
        f"| {_mm(m['half_x_cat'])}× `chunkstore cat --offset` of it ({_mm(m['half_mount_ms'], 0)} ms) | |",
    ]


def _first_read_lines(m):
    if "http_first_4k_pack_gets" not in m:
        return []
    n = m["http_first_4k_pack_gets"]
    return [
        f"| first 4 KiB read of the {m['size_mib']} MiB object through a mount of the store as an http:// store "
        "(served by `chunkstore serve`; a bucket store to its clients), empty chunk cache: pack GETs in the "
        f"server's log | one ranged GET of one chunk | {n} ({m['http_first_4k_pack_bytes']:,} bytes) | "
        f"{_met(n == 1)} |",
    ]


def _read_ahead(m):
    if "read_ahead_kib" not in m:
        return ""
    return (f" The mount's kernel read-ahead: {m['read_ahead_kib']} KiB (`chunkstore mount` raises it to "
            "`--read-ahead`, default 1024 KiB, where it may: as root; the kernel's own is 128 KiB).")


def _base_lines(m):
    if "seq_x_base" not in m:
        return []
    return [
        f"| reference: the same sequential read through a mount served by {m['base']} (same rounds, its "
        f"read-ahead {m['base_read_ahead_kib']} KiB): its time over this build's | | {_mm(m['seq_x_base'])}× "
        f"({m['base']}'s mount {_mm(m['seq_base_mount_ms'], 0)} ms) | |",
    ]


def _cpu_lines(m):
    if "seq_mount_cpu_s" not in m:  # measured before CPU time was taken
        return []
    return [
        "",
        f"CPU time of the sequential read (user + system): through the mount {_mm(m['seq_mount_cpu_s'])} s "
        f"(the daemon {_mm(m['seq_daemon_cpu_s'])} s, the rest the reading `cat`, which pays the kernel's FUSE "
        f"transfers and page-cache fill), `chunkstore cat` {_mm(m['seq_cat_cpu_s'])} s. Spread without loss "
        f"over {m['nproc']} cores, the mount's CPU time allows at best {_mm(m['seq_x_cat_cpu_bound'])}× "
        "`chunkstore cat`: where that bound is below the target, the target is beyond this machine at the "
        "mount's present cost, and only less CPU per byte (fewer copies between the kernel and the daemon) "
        "can reach it.",
    ]

# SPDX-License-Identifier: Apache-2.0
"""The serve and copy section of docs/performance.md (scripts/report.py
calls it), from measure_serve.py's measurements, with the targets of the
copy and serve issue."""


def _mm(s, digits=2, scale=1.0):
    f = f"{{:,.{digits}f}}"
    return f"{f.format(s['median'] / scale)} ({f.format(s['min'] / scale)}–{f.format(s['max'] / scale)})"


def _met(ok):
    return "met" if ok else "**not met**"


def _floor_row(sv, n):
    """What a GET that hashes every byte must spend, whatever the server:
    the SHA-256 of every byte, and the transfer alone (a bare sendfile
    responder and curl)."""
    sha, bare = sv["sha256_cpu_s"], sv["bare_get_cpu_s"]["median"]
    best = (sha + bare) / n
    first = "a first GET" if "first_get_s" in sv else "any verified GET"
    return (f"| the floor of {first}, which hashes every byte: the SHA-256 of every byte ({sha:.3f} s on one core, chunks two at a time interleaved, the fastest this code hashes) plus the transfer "
            f"alone (a bare responder that sendfile()s the raw bytes, and curl: {_mm(sv['bare_get_cpu_s'], 3)} s CPU; "
            f"{_mm(sv['bare_get_s'], 3)} s wall), over {n} cores: at best {best:.3f} s | — | "
            f"{sv['cat_s']['median'] / best:.2f}× cat | |")


def _warm(sv):
    if "first_get_s" not in sv:
        return ""
    return (", warm: the server has proven its id and holds its verified chunks in memory, "
            "so it sends them with no pack read and no hashing")


def serve_section(m, rel_path):
    if not m:
        return ("Not measured yet: run `scripts/measure-serve.sh`, which writes "
                "`docs/measurements/serve-DATE.json`, then `python3 scripts/report.py`.")
    sv, cp = m["serve"], m["copy"]
    commit = f" at commit {m['git_commit']}" if m.get("git_commit") else ""
    mib = sv["object_bytes"] / (1 << 20)
    lines = [f"Measured {m['date']}{commit}, {m['rounds']} rounds, {m['nproc']} cores. Source: `{rel_path}`. "
             f"Method: {m['notes']}.", "",
             "| measure | target | measured | |", "|---|---|---|---|",
             f"| full GET of a {mib:.0f} MiB object (curl to /dev/null){_warm(sv)} | ≥ 0.8× `cat` of it | "
             f"{_mm(sv['get_vs_cat'])}× (GET {_mm(sv['get_s'], 3)} s, cat {_mm(sv['cat_s'], 3)} s) | "
             f"{_met(sv['get_vs_cat']['median'] >= 0.8)} |",
             *([f"| the most the CPU time allows a GET: (server + curl CPU, {_mm(sv['get_cpu_s'], 3)} s) over "
                f"{m['nproc']} cores, against cat ({_mm(sv['cat_cpu_s'], 3)} s CPU) | — | "
                f"{_mm(sv['get_vs_cat_cpu_bound'])}× cat | |"] if "get_cpu_s" in sv else []),
             *([f"| the first full GET of it on a fresh server (read from the packs, the id proven) | — | "
                f"{_mm(sv['first_get_vs_cat'])}× (GET {_mm(sv['first_get_s'], 3)} s, "
                f"{_mm(sv['first_get_cpu_s'], 3)} s CPU, server and curl) | |",
                f"| the second full GET on that server (streamed, each chunk checked against its id and kept in the "
                f"cache) | — | {_mm(sv['fill_get_vs_cat'])}× (GET {_mm(sv['fill_get_s'], 3)} s) | |"]
               if "first_get_s" in sv else []),
             *([_floor_row(sv, m["nproc"])] if "sha256_cpu_s" in sv and "bare_get_cpu_s" in sv else []),
             *([f"| `cat` of it from the served store opened as `http://HOST:PORT` | — | "
                f"{_mm(sv['http_store_cat_vs_cat'])}× (http store {_mm(sv['http_store_cat_s'], 3)} s) | |"]
               if "http_store_cat_s" in sv else []),
             f"| 32 KiB range GETs, 8 keep-alive clients, warm ({sv['wrk']}) | ≥ 20,000 requests/s | "
             f"{_mm(sv['range_32k_requests_per_s'], 0)} | {_met(sv['range_32k_requests_per_s']['median'] >= 20000)} |",
             f"| `copy` directory → directory, {cp['bytes'] >> 30} GiB of new data | ≥ 0.8× a durable publish of it | "
             f"{_mm(cp['copy_vs_publish'])}× (copy {_mm(cp['copy_s'], 3)} s, publish {_mm(cp['publish_s'], 3)} s) | "
             f"{_met(cp['copy_vs_publish']['median'] >= 0.8)} |",
             *([f"| `copy` directory → `http://` (a store served with `--allow-write`, same machine), "
                f"{cp['bytes'] >> 30} GiB of new data | — | {_mm(cp['copy_to_http_vs_publish'])}× a durable publish "
                f"(copy {_mm(cp['copy_to_http_s'], 3)} s) | |"] if "copy_to_http_s" in cp else []),
             f"| `copy` of a second version with a one-byte edit | ≤ 2 chunks + metadata | "
             f"chunks sent: {cp['edit_chunks_sent']}, skipped: {cp['edit_chunks_skipped']} | "
             f"{_met(cp['edit_chunks_sent'] <= 2)} |"]
    if "first_get_s" in sv:
        lines += ["", "A warm GET sends bytes that were checked when they entered the server's cache, and the "
                  "object's id was proven by an earlier whole read through the same manifest (docs/cli.md, "
                  "serve), so it neither reads a pack nor hashes: only the transfer is left. The first GET of "
                  "an object on a server does what `cat` does (every chunk read and checked, the id proven) and "
                  "cannot beat the floor row. The second streams it again, checking each chunk against its own "
                  "id and keeping it in the cache, whose memory the kernel must first provide: the slowest of "
                  "the three, once per object while it stays cached (and at most once a minute for objects "
                  "that, together, do not fit the cache)."]
    return "\n".join(lines)

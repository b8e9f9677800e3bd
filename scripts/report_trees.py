# SPDX-License-Identifier: Apache-2.0
"""The trees section of docs/performance.md (scripts/report.py calls it):
chunkstore's trees beside restic, borg and casync on the Linux source tree
(compare_trees.py), with the targets of the trees issue."""


def _fmt(v, digits=2):
    return f"{v:,.{digits}f}"


def _mm(s, digits=2, scale=1.0):
    return f"{_fmt(s['median'] / scale, digits)} ({_fmt(s['min'] / scale, digits)}–{_fmt(s['max'] / scale, digits)})"


def _met(ok):
    return "met" if ok else "**not met**"


def trees_section(trees, rel_path):
    if not trees:
        return ("Not measured yet: run `scripts/compare-trees.sh` (as root), which writes "
                "`docs/measurements/trees-DATE.json`, then `python3 scripts/report.py`.")
    d = trees["dataset"]
    v = trees["versions"]
    commit = f" at commit {trees['git_commit']}" if trees.get("git_commit") else ""
    lines = [f"Measured {trees['date']}{commit}, {trees['rounds']} rounds, tools in rotating order; "
             f"{v['chunkstore']}, {v['restic'].split(' compiled')[0]}, {v['borg']}, {v['casync']}. "
             f"Data: {d['package']}, {d['files']:,} files and {d['entries']:,} entries, "
             f"{d['bytes'] / 1e6:,.0f} MB ({d['how']}). Source: `{rel_path}`. Method: {trees['notes']}.", "",
             "| tool | publish s | publish CPU s | publish RSS MiB | publish again s | restore s | restore CPU s "
             "| restore RSS MiB | metadata as the source |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in trees["results"].items():
        same = r.get("metadata_identical", [])
        lines.append(f"| {name} | {_mm(r['publish_s'])} | {_mm(r['publish_cpu_s'])} | "
                     f"{r['publish_rss_kib']['median'] / 1024:.0f} | {_mm(r['republish_s'])} | {_mm(r['restore_s'])} | "
                     f"{_mm(r['restore_cpu_s'])} | {r['restore_rss_kib']['median'] / 1024:.0f} | "
                     f"{'yes' if same and all(same) else 'no' if same else '-'} |")
    ratios = trees.get("ratios_to_fastest_peer", {})
    cs = trees["results"].get("chunkstore", {})
    lines += ["", "Targets (ratios per round: the fastest other tool's time over chunkstore's):", "",
              "| measure | target | measured | |", "|---|---|---|---|"]
    if "publish" in ratios:
        r = ratios["publish"]
        lines.append(f"| publish into a fresh store | ≥ 4× the fastest peer | {_mm(r)}× | {_met(r['median'] >= 4)} |")
    if "republish" in ratios:
        r = ratios["republish"]
        per = cs["republish_s"]["median"] / d["files"] * 100000
        lines.append(f"| publish of the unchanged tree again | ≥ 4× the fastest peer, ≤ 1 s per 100,000 files | "
                     f"{_mm(r)}×; {per:.2f} s per 100,000 files | {_met(r['median'] >= 4 and per <= 1)} |")
    if "restore" in ratios:
        r = ratios["restore"]
        lines.append(f"| restore into an empty directory | ≥ 3× the fastest peer | {_mm(r)}× | {_met(r['median'] >= 3)} |")
    if "over_changed_vs_full" in ratios:
        r = ratios["over_changed_vs_full"]
        lines.append(f"| restore over a copy with 100 files changed | ≥ 5× a full restore's speed | {_mm(r)}× "
                     f"({_mm(cs['restore_over_changed_s'])} s) | {_met(r['median'] >= 5)} |")
    same = cs.get("metadata_identical", [])
    if same:
        lines.append(f"| metadata | `diff -r` and (path, type, mode, mtime, target) identical to the source | "
                     f"{'identical' if all(same) else 'different'} in every round | {_met(all(same))} |")
    lines += _bounds(trees, ratios, cs)
    return "\n".join(lines)


def _bounds(trees, ratios, cs):
    """What the CPU time allows: a command cannot end before its CPU time
    spread over every core, whatever its schedule."""
    n = trees.get("nproc")
    if not n or not cs:
        return []
    fastest = {op: min(r[key]["median"] for t, r in trees["results"].items() if t != "chunkstore")
               for op, key in (("publish", "publish_s"), ("restore", "restore_s"))}
    out = ["", f"What bounds them, on {n} cores (medians): a command cannot end before its CPU time spread "
           "without loss over every core."]
    for op, target in (("publish", 4), ("restore", 3)):
        cpu = cs[f"{op}_cpu_s"]["median"]
        need = fastest[op] / target
        out.append(f"- {op}: {cpu:.2f} CPU-s, so at best {cpu / n:.2f} s; {target}× the fastest peer needs "
                   f"{need:.2f} s or less, " + ("which that bound allows." if cpu / n <= need else
                                                "which needs less CPU per byte, not a better schedule."))
    out += _floors(trees, fastest, n, cs)
    return out


def _floors(trees, fastest, n, cs):
    """The work no tool can skip (compare_trees.py's floors) against what
    the targets allow."""
    f = trees.get("floors")
    if not f or "sha256_s" not in f:
        return []
    default, *others = f["codecs"]
    read, create = f["read_sys_s"]["median"], f["create_sys_s"]["median"]
    sha = f["sha256_s"]
    out = ["", "The work a publish and a restore of this tree cannot skip, measured in the same run (CPU seconds; "
           "the kernel's share from system time, the rest on one thread with chunkstore's own code): reading every "
           f"file into one reused buffer {read:.2f} s (min–max {f['read_sys_s']['min']:.2f}–{f['read_sys_s']['max']:.2f}); "
           f"creating the tree on a fresh ext4 (`tar -x`) {create:.2f} s "
           f"({f['create_sys_s']['min']:.2f}–{f['create_sys_s']['max']:.2f}); the SHA-256 of every chunk (two at a time "
           f"interleaved, the fastest this code hashes) {sha:.2f} s; "
           + "; ".join(f"compressing every chunk with {c} {f[f'compress_{c}_s']:.2f} s and decoding it "
                       f"{f[f'decode_{c}_s']:.2f} s" for c in f["codecs"]) + "."]
    pub = read + sha + f[f"compress_{default}_s"]
    need = fastest["publish"] / 4
    line = (f"- publish: read + hash + compress ({default}, the default) = {pub:.2f} CPU-s, at best {pub / n:.2f} s on "
            f"{n} cores, against the {need:.2f} s that 4× the fastest peer allows")
    if pub / n > need:
        line += (": no publish that compresses at the default level meets the target on this machine, however "
                 "little else it does.")
    else:
        line += f": the target leaves {need - pub / n:.2f} s for everything else."
    line += f" chunkstore's publish spends {cs['publish_cpu_s']['median'] / pub:.1f}× this CPU time."
    for c in others:
        lower = read + sha + f[f"compress_{c}_s"]
        line += (f" With {c}: {lower:.2f} CPU-s, at best {lower / n:.2f} s (a faster level stores more than "
                 "restic's zstd on the kernel tarball: docs/design.md, \"Why zstd level 3\").")
    out.append(line)
    rst = create + sha + f[f"decode_{default}_s"]
    need = fastest["restore"] / 3
    line = (f"- restore: create + decode + hash = {rst:.2f} CPU-s, at best {rst / n:.2f} s on {n} cores, against "
            f"the {need:.2f} s that 3× the fastest peer allows")
    if rst / n > need:
        line += ": no restore that verifies what it writes meets the target on this machine, however little else it does."
    else:
        line += (f": the target leaves {need - rst / n:.2f} s ({(need - rst / n) / need:.0%} of it) for everything "
                 "else a restore does (reading the packs, the index, directories, modes and times), with both cores "
                 "busy from the first file to the last.")
    line += f" chunkstore's restore spends {cs['restore_cpu_s']['median'] / rst:.1f}× this CPU time."
    out.append(line)
    return out

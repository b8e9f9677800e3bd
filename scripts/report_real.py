# SPDX-License-Identifier: Apache-2.0
"""The real-data sections of docs/performance.md (scripts/report.py calls
these): peers on real data (compare_real.py), the codec frontier
(measure-codecs.sh) and chunking parameters (chunking_study.py)."""
import os
import statistics

MB = 1e6


def _fmt(v, digits=1):
    return f"{v:,.{digits}f}"


def _mm(s, digits=1, scale=1.0):
    return f"{_fmt(s['median'] / scale, digits)} ({_fmt(s['min'] / scale, digits)}–{_fmt(s['max'] / scale, digits)})"


def real_section(real, rel_path):
    if not real:
        return ("Not measured yet: run `scripts/compare-real.sh`, which writes "
                "`docs/measurements/real-DATE.json`, then `python3 scripts/report.py`.")
    rounds = f"{real['rounds']} round{'s' if real['rounds'] != 1 else ''}"
    commit = f" at commit {real['git_commit']}" if real.get("git_commit") else ""
    lines = [f"Measured {real['date']}{commit}, {rounds}, tools in rotating order; "
             f"{real['versions']['chunkstore']} ({real['versions']['chunkstore_compression']}), "
             f"{real['versions']['restic'].split(' compiled')[0]}, {real['versions']['borg']}, "
             f"{real['versions']['casync']}. Source: `{rel_path}`. Method: {real['notes']}.", ""]
    for dname, tools in real["results"].items():
        prov = real["datasets"][dname]
        vers = prov["versions"]
        first = vers[0]
        names = ", ".join(prov.get("packages", [])) or prov.get("how", "")
        lines += [f"### {dname}", "",
                  f"Versions: {', '.join(v['file'] + ' (' + _fmt(v['bytes'] / MB, 0) + ' MB)' for v in vers)}; "
                  f"from {names}" + (f" ({prov['how']})" if prov.get("packages") else "") + ". "
                  f"Yardstick H (`openssl dgst -sha256` of the last version): "
                  f"{_mm(real['yardstick_mib_per_s'][dname])} MiB/s.", "",
                  "| tool | ingest MiB/s | ingest CPU s | stored / input | added by each later version (MB) "
                  "| restore MiB/s | restored blocks / input's | peak RSS MiB |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for tname, r in tools.items():
            added = r["added_bytes"]  # per round, per later version
            per_version = [statistics.median(rnd[i] for rnd in added) for i in range(len(added[0]))]
            lines.append(
                f"| {tname} | {_mm(r['ingest_mib_s'])} | {_mm(r['ingest_cpu_s'], 2)} | "
                f"{r['stored_bytes']['median'] / first['bytes']:.3f} | "
                f"{', '.join(_fmt(a / MB, 1) for a in per_version)} | {_mm(r['restore_mib_s'])} | "
                f"{r['restore_allocated']['median'] / vers[-1]['allocated']:.2f} | "
                f"{r['ingest_rss_kib']['median'] / 1024:.0f} |")
        cs = tools.get("chunkstore")
        if cs and "ratio_ingest_to_best_peer" in cs:
            ri, rr = cs["ratio_ingest_to_best_peer"], cs["ratio_restore_to_best_peer"]
            lines += ["", f"chunkstore against the fastest other tool of each round: ingest {_mm(ri, 2)}×, "
                      f"restore {_mm(rr, 2)}×."]
        lines.append("")
    lines += targets_lines(real)
    return "\n".join(lines)


def targets_lines(real):
    res = real["results"]
    out = ["### Targets on real data", "",
           "| measure | target | measured | |", "|---|---|---|---|"]

    def peers(d):
        return {t: r for t, r in res.get(d, {}).items() if t != "chunkstore"}

    def row(measure, target, measured, met):
        out.append(f"| {measure} | {target} | {measured} | {'met' if met else 'not met'} |")

    k = res.get("kernel-tar")
    if k and "chunkstore" in k and peers("kernel-tar"):
        cs, p = k["chunkstore"], peers("kernel-tar")
        ri = cs["ratio_ingest_to_best_peer"]["median"]
        low_cpu = min(r["ingest_cpu_s"]["median"] for r in p.values())
        row("kernel tar ingest", "≥ 1.5× the fastest peer's MiB/s", f"{ri:.2f}×", ri >= 1.5)
        row("kernel tar ingest CPU", "≤ the lowest peer's CPU-seconds",
            f"{cs['ingest_cpu_s']['median']:.2f} s against {low_cpu:.2f} s", cs["ingest_cpu_s"]["median"] <= low_cpu)
        small = min(r["stored_bytes"]["median"] for r in p.values())
        row("kernel tar stored bytes", "≤ the smallest peer's",
            f"{cs['stored_bytes']['median'] / MB:,.0f} MB against {small / MB:,.0f} MB",
            cs["stored_bytes"]["median"] <= small)
        rr = cs["ratio_restore_to_best_peer"]["median"]
        row("kernel tar restore", "≥ 2× the fastest peer", f"{rr:.2f}×", rr >= 2)
    im = res.get("ext4-image")
    if im and "chunkstore" in im and peers("ext4-image"):
        cs, p = im["chunkstore"], peers("ext4-image")

        def added(r):
            return statistics.median(rnd[0] for rnd in r["added_bytes"])
        small = min(added(r) for r in p.values())
        row("VM image, bytes added by the scattered edit (default store)", "≤ the smallest peer's",
            f"{added(cs) / MB:.1f} MB against {small / MB:.1f} MB", added(cs) <= small)
        rr = cs["ratio_restore_to_best_peer"]["median"]
        row("VM image restore", "≥ 2× the fastest peer", f"{rr:.2f}×", rr >= 2)
        alloc = cs["restore_allocated"]["median"] / real["datasets"]["ext4-image"]["versions"][-1]["allocated"]
        row("VM image restore, allocated blocks", "≤ 1.05× the input's", f"{alloc:.3f}×", alloc <= 1.05)
    out.append("")
    return out


def codecs_section(codecs, rel_path):
    if not codecs:
        return ("Not measured yet: run `scripts/measure-codecs.sh`, which writes "
                "`docs/measurements/codecs-DATE.json`, then `python3 scripts/report.py`.")
    env = codecs["environment"]
    lines = [f"Every chunk of the first version of each data set (default chunking), compressed with "
             f"`TryCompress` and decoded with `Decompress` on one core, as a publish and a read do per chunk; "
             f"{env['samples']} samples each, medians with min–max. Measured {env['date']} at commit "
             f"{env['git_commit']}. Source: `{rel_path}`.", ""]
    for dname, results in codecs["datasets"].items():
        by = {r["name"]: r for r in results}
        specs = [r["name"][len("codec-"):-len("-compress")] for r in results if r["name"].endswith("-compress")]
        lines += [f"**{dname}**", "", "| codec | compress MiB/s | decode MiB/s | stored / input |",
                  "|---|---:|---:|---:|"]
        for s in specs:
            c, d = by[f"codec-{s}-compress"], by.get(f"codec-{s}-decode")
            dec = f"{_fmt(d['mib_per_s'], 0)}" if d else "–"
            lines.append(f"| {s} | {_fmt(c['mib_per_s'], 0)} ({_range_rate(c)}) | "
                         f"{dec} | {c['stored_per_input']:.4f} |")
        lines.append("")
    return "\n".join(lines)


def _range_rate(r):
    # Rates at the slowest and fastest sample.
    work = r["mib_per_s"] * r["median_ms"]
    return f"{_fmt(work / r['max_ms'], 0)}–{_fmt(work / r['min_ms'], 0)}"


def chunking_section(ch, rel_path):
    if not ch:
        return ("Not measured yet: run `python3 scripts/chunking_study.py --chunkstore build-release/cli/chunkstore`, "
                "which writes `docs/measurements/chunking-DATE.json`, then `python3 scripts/report.py`.")
    lines = [f"Each version of each data set published in order into a fresh store made with the parameters "
             f"({ch['chunkstore']}, {ch['compression']}); bytes on disk each later version adds, the first "
             f"version's chunk count and the index's size after all versions. Measured {ch['date']}. "
             f"Source: `{rel_path}`.", ""]
    for dname in ch["versions"]:
        rows = [r for r in ch["rows"] if r["dataset"] == dname]
        lines += [f"**{dname}** ({' → '.join(ch['versions'][dname])})", "",
                  "| parameters (min/avg/max, level) | chunks of the first version | stored, first version (MB) "
                  "| added by each later version (MB) | index (MB) |", "|---|---:|---:|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['params']} | {r['first_version_chunks']:,} | {r['first_version_stored'] / MB:,.1f} | "
                         f"{', '.join(_fmt(a / MB, 1) for a in r['added_bytes'])} | {r['index_bytes'] / MB:.1f} |")
        lines.append("")
    return "\n".join(lines)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pools several chunkstore-bench JSON reports of the same suite into one:
each operation's samples from every round, and its median, range and rate
recomputed from them. A single run can land in a slow stretch of a shared
machine; rounds spread over minutes put such a stretch into a minority of
the samples instead of the whole of an operation.

Usage: scripts/merge_bench.py OUT.json ROUND1.json [ROUND2.json ...]
The first round's environment is kept (with "rounds" added), and so are
the fields other than the samples (chunk counts, latency percentiles,
memory figures), which are those of the first round that has the
operation, except per-run means (fields ending in _mean, such as CPU
times), which are averaged over the rounds."""
import json
import statistics
import sys

RATES = ("mib_per_s", "objects_per_s")


def main(out_path, paths):
    reports = [json.load(open(p)) for p in paths]
    merged, order = {}, []
    for rep in reports:
        for r in rep["results"]:
            m = merged.get(r["name"])
            if m is None:
                m = merged[r["name"]] = dict(r, samples_ms=list(r["samples_ms"]))
                m["_rate_ms"] = {k: r[k] * r["median_ms"] for k in RATES if k in r}
                m["_means"] = {k: [v] for k, v in r.items() if k.endswith("_mean")}
                order.append(r["name"])
            else:
                if m["inside"] != r["inside"]:
                    sys.exit(f"merge_bench: {r['name']} measures different things in different rounds")
                m["samples_ms"] += r["samples_ms"]
                for k, v in r.items():
                    if k.endswith("_mean"):
                        m["_means"].setdefault(k, []).append(v)
    results = []
    for name in order:
        m = merged[name]
        s = m["samples_ms"]
        m["median_ms"], m["min_ms"], m["max_ms"] = statistics.median(s), min(s), max(s)
        for k, rate_ms in m.pop("_rate_ms").items():  # rate = work / time
            m[k] = rate_ms / m["median_ms"] if m["median_ms"] > 0 else m[k]
        for k, values in m.pop("_means").items():
            m[k] = statistics.mean(values)
        results.append(m)
    env = dict(reports[0]["environment"], rounds=len(reports))
    # The layout chunkstore-bench writes: one line per result.
    with open(out_path, "w") as f:
        f.write('{\n  "environment": ' + json.dumps(env) + ',\n  "results": [\n')
        f.write(",\n".join("    " + json.dumps(r) for r in results))
        f.write("\n  ]\n}\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])

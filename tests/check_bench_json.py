#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a chunkstore-bench JSON report: it parses, has the environment
fields, and lists every operation with consistent statistics."""
import json
import platform
import statistics
import sys

EXPECTED = [
    "read-file", "read-hash-twice", "prepare-file", "prepare-bytes-spill", "compress-random",
    "compress-random-noskip", "publish-memory", "publish-file", "publish-again",
    "publish-one-byte-edit", "read-verified", "range-32k-cold", "range-32k-warm",
    "small-publish", "small-publish-durable", "small-read", "small-read-batch", "concurrent-read-1",
    "concurrent-read-2", "concurrent-read-4", "concurrent-read-8", "catalog-lookup",
    "catalog-ls-10000", "catalog-history-1000", "memory-256", "memory-1048576",
]
if platform.machine() in ("x86_64", "AMD64"):
    EXPECTED.append("yardstick-clock")  # x86-64 only (inline assembly)
ENV = ["cpu", "cores", "kernel", "compiler", "build_type", "flags", "git_commit", "libraries", "date"]


def main(path):
    with open(path) as f:
        report = json.load(f)
    problems = []
    for key in ENV:
        if key not in report["environment"]:
            problems.append(f"environment lacks {key}")
    results = {r["name"]: r for r in report["results"]}
    for name in EXPECTED:
        r = results.get(name)
        if r is None:
            problems.append(f"missing operation {name}")
            continue
        samples = r["samples_ms"]
        if len(samples) < 1:
            problems.append(f"{name}: no samples")
            continue
        if abs(statistics.median(samples) - r["median_ms"]) > 1e-3 * max(1.0, r["median_ms"]):
            problems.append(f"{name}: median_ms is not the median of samples_ms")
        if r["min_ms"] != min(samples) and abs(r["min_ms"] - min(samples)) > 1e-3:
            problems.append(f"{name}: min_ms is not the minimum")
        if abs(r["max_ms"] - max(samples)) > 1e-3:
            problems.append(f"{name}: max_ms is not the maximum")
    edit = results.get("publish-one-byte-edit", {})
    for key in ["chunks_total", "chunks_reused", "pack_bytes_appended", "store_bytes_appended"]:
        if key not in edit:
            problems.append(f"publish-one-byte-edit lacks {key}")
    for name in ["memory-256", "memory-1048576"]:
        if results.get(name, {}).get("peak_rss_kib_median", 0) <= 0:
            problems.append(f"{name}: no peak RSS")
    if "mib_per_s" not in results.get("publish-file", {}):
        problems.append("publish-file lacks mib_per_s")
    if "objects_per_s" not in results.get("small-publish", {}):
        problems.append("small-publish lacks objects_per_s")
    for p in problems:
        print("check_bench_json:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

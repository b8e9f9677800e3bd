#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Chunking parameters on real version series: for each parameter set,
publishes every version of each data set of scripts/compare_real.py into a
fresh store made with those parameters (default compression) and records
what each later version adds to the store (bytes on disk), the chunks of the
first version, and the index's size. Writes
docs/measurements/chunking-DATE.json (see scripts/report_real.py)."""
import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import du, write_measurement  # noqa: E402
from compare_real import datasets  # noqa: E402

# (label, min, avg, max, level)
PARAMS = [
    ("default 256K/1M/4M L1", 262144, 1048576, 4194304, 1),
    ("256K/1M/4M L2", 262144, 1048576, 4194304, 2),
    ("64K/256K/1M L1", 65536, 262144, 1048576, 1),
    ("16K/64K/256K L1", 16384, 65536, 262144, 1),
    ("16K/64K/256K L2", 16384, 65536, 262144, 2),
    ("8K/32K/128K L1", 8192, 32768, 131072, 1),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunkstore", required=True)
    ap.add_argument("--cache", default=os.environ.get("CHUNKSTORE_REALDATA", "/var/tmp/chunkstore-realdata"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    exe = os.path.abspath(args.chunkstore)
    sets = datasets(args.cache)
    if args.only:
        sets = {k: v for k, v in sets.items() if k in args.only.split(",")}
    work = tempfile.mkdtemp(prefix="chunkstore-chunking-", dir=args.cache)
    rows = []
    try:
        for dname, versions in sets.items():
            for label, lo, avg, hi, level in PARAMS:
                store = os.path.join(work, "s")
                subprocess.run([exe, "--store", store, "-q", "init", "--min", str(lo), "--avg", str(avg),
                                "--max", str(hi), "--level", str(level)], check=True)
                added, chunks = [], None
                for i, v in enumerate(versions):
                    before = du(store)
                    out = subprocess.run([exe, "--store", store, "--json", "publish", v], check=True,
                                         capture_output=True, text=True).stdout
                    if i == 0:
                        chunks = json.loads(out)["published"][0]["chunks"]
                        first = du(store)
                    else:
                        added.append(du(store) - before)
                rows.append({"dataset": dname, "params": label, "min": lo, "avg": avg, "max": hi, "level": level,
                             "first_version_chunks": chunks, "first_version_stored": first,
                             "added_bytes": added,
                             "index_bytes": os.path.getsize(os.path.join(store, "index.db"))})
                shutil.rmtree(store)
                print(f"chunking_study: {dname} {label}: added {added}", flush=True)
        version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.split("\n")
        out = {"date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
               "chunkstore": version[0], "compression": version[1],
               "versions": {d: [os.path.basename(p) for p in v] for d, v in sets.items()},
               "rows": rows}
        print("chunking_study: wrote", write_measurement("chunking", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

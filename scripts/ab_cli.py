#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The measuring half of scripts/ab-cli.sh: alternating whole-process runs
of two chunkstore binaries on one input: publish into a fresh store,
publish of a copy with one byte changed into a store holding the input
(re-ingest; a different byte each round, so every run has an edit to
find), and `cat REF > FILE`, timed and prepared as scripts/compare_peers.py
does."""
import argparse
import os
import shutil
import statistics
import subprocess
import time

from compare_peers import edited_copy, make_payload, recycle_pages


def timed(cmd):
    os.sync()  # nothing earlier still being written back meanwhile
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--base-label", default="base")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    big = make_payload(args.work, args.size_mib, "chunkstore")
    sides = {"base": os.path.abspath(args.base), "new": os.path.abspath(args.new)}
    ops = ("publish", "reingest", "restore", "cat-null")
    times = {side: {op: [] for op in ops} for side in sides}
    stores = {}
    for side, exe in sides.items():
        stores[side] = os.path.join(args.work, "store-" + side)
        subprocess.run([exe, "--store", stores[side], "-q", "init"], check=True)
        out = subprocess.run([exe, "--store", stores[side], "publish", big], check=True, capture_output=True,
                             text=True).stdout
        stores[side + "-ref"] = out.split()[0]
    for rnd in range(args.rounds):
        order = list(sides) if rnd % 2 == 0 else list(reversed(list(sides)))
        for side in order:
            exe = sides[side]
            fresh = os.path.join(args.work, "fresh")
            subprocess.run([exe, "--store", fresh, "-q", "init"], check=True)
            times[side]["publish"].append(timed([exe, "--store", fresh, "publish", big]))
            shutil.rmtree(fresh)
            edited = os.path.join(args.work, "edited.bin")
            edited_copy(big, edited, (args.size_mib << 19) + 4096 * rnd)
            times[side]["reingest"].append(timed([exe, "--store", stores[side], "publish", edited]))
            os.unlink(edited)
            target = os.path.join(args.work, "out.bin")
            recycle_pages(args.work, args.size_mib)
            times[side]["restore"].append(
                timed(["sh", "-c", f'"{exe}" --store "{stores[side]}" cat {stores[side + "-ref"]} > "{target}"']))
            os.unlink(target)
            times[side]["cat-null"].append(
                timed([exe, "--store", stores[side], "cat", stores[side + "-ref"]]))  # stdout is /dev/null
    print(f"base {args.base_label} vs working tree, {args.rounds} alternating rounds, {args.size_mib} MiB; "
          f"whole-process ms (median, min-max)")
    print(f"{'command':10} {'base':>26} {'new':>26} {'speed-up':>9}")
    for op in ops:
        a, b = [x * 1e3 for x in times["base"][op]], [x * 1e3 for x in times["new"][op]]
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"{op:10} {f'{ma:.1f} ({min(a):.1f}-{max(a):.1f})':>26} {f'{mb:.1f} ({min(b):.1f}-{max(b):.1f})':>26} "
              f"{ma / mb:8.2f}x")


if __name__ == "__main__":
    main()

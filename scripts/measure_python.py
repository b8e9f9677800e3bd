# SPDX-License-Identifier: Apache-2.0
"""Measures the Python package's verified reads against the C++ reader, in
alternating rounds: chunkstore-bench's read-verified (OpenReader + Read of
the whole object in 1 MiB reads, in-process) and, in a fresh interpreter
each round, Store.open(ref).readinto of the same-sized object, once into
one buffer the size of the object (as numpy users do) and once in 1 MiB
reads into a reused buffer. Writes docs/measurements/python-DATE.json.

Usage: measure_python.py --build build-release [--rounds N] [--mib M]
"""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import ROOT, write_measurement  # noqa: E402

# Run in a fresh interpreter: publishes once, then times reads.
READER = r"""
import json, sys, time
import chunkstore
location, ref, samples = sys.argv[1], sys.argv[2], int(sys.argv[3])
with chunkstore.Store.open(location) as store:
    size = store.stat(ref)["size"]
    whole = bytearray(size)
    piece = bytearray(1 << 20)
    out = {"whole_ms": [], "pieces_ms": []}
    for i in range(samples + 1):  # the first is a warmup
        t = time.perf_counter()
        with store.open(ref) as f:
            got = f.readinto(whole)
        dt = (time.perf_counter() - t) * 1000
        assert got == size
        if i:
            out["whole_ms"].append(dt)
        t = time.perf_counter()
        with store.open(ref) as f:
            total = 0
            while True:
                n = f.readinto(piece)
                if not n:
                    break
                total += n
        dt = (time.perf_counter() - t) * 1000
        assert total == size
        if i:
            out["pieces_ms"].append(dt)
print(json.dumps(out))
"""


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "values": values}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mib", type=int, default=256)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    bench = os.path.join(build, "bench", "chunkstore-bench")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    work = tempfile.mkdtemp(prefix="chunkstore-python-", dir="/var/tmp")
    try:
        store = os.path.join(work, "store")
        payload = os.path.join(work, "payload")
        with open(payload, "wb") as f:
            for _ in range(args.mib):
                f.write(os.urandom(1 << 20))
        publish = ("import sys, chunkstore\n"
                   "s = chunkstore.Store.open(sys.argv[1], create=True)\n"
                   "print(s.publish(sys.argv[2], name='obj')['id'])\n")
        subprocess.run([python, "-c", publish, store, payload], check=True, env=env, stdout=subprocess.DEVNULL)
        cpp, whole, pieces, r_whole, r_pieces = [], [], [], [], []
        for rnd in range(args.rounds):
            def run_cpp():
                out = os.path.join(work, "bench.json")
                subprocess.run([bench, "--size", f"{args.mib}MiB", "--only", "^read-verified$", "--warmups", "1",
                                "--samples", "3", "--dir", os.path.join(work, "bench"), "--json", out],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                res = json.load(open(out))["results"]
                return next(o["median_ms"] for o in res if o["name"] == "read-verified")

            def run_py():
                out = subprocess.run([python, "-c", READER, store, "obj", "3"], check=True, env=env,
                                     capture_output=True, text=True).stdout
                d = json.loads(out)
                return statistics.median(d["whole_ms"]), statistics.median(d["pieces_ms"])

            if rnd % 2:
                w, p = run_py()
                c = run_cpp()
            else:
                c = run_cpp()
                w, p = run_py()
            cpp.append(c)
            whole.append(w)
            pieces.append(p)
            r_whole.append(c / w)
            r_pieces.append(c / p)
            print(f"measure_python: round {rnd + 1}: C++ {c:.1f} ms, Python readinto whole {w:.1f} ms, "
                  f"1 MiB pieces {p:.1f} ms", flush=True)
        out = {
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rounds": args.rounds,
            "git_commit": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                         capture_output=True, text=True).stdout.strip(),
            "nproc": os.cpu_count(),
            "object_bytes": args.mib << 20,
            "cpp_read_verified_ms": stats(cpp),
            "python_readinto_whole_ms": stats(whole),
            "python_readinto_1mib_ms": stats(pieces),
            "whole_vs_cpp": stats(r_whole),
            "pieces_vs_cpp": stats(r_pieces),
            "notes": "pseudo-random object in the page cache; each round runs chunkstore-bench read-verified "
                     "(median of 3 after a warmup) and a fresh interpreter's Python reads (median of 3 after a "
                     "warmup), alternating which goes first; ratios per round (C++ time / Python time)",
        }
        print("measure_python: wrote", write_measurement("python", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

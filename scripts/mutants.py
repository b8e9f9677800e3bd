#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Mutation testing of the code that protects data.

Each mutant in scripts/mutants.txt is a small, deliberate bug in a place
that protects data (verification, gc liveness, the fsyncs and renames of
the commit protocols, manifest and log checks, range arithmetic). The
script copies the working tree to a scratch directory once, builds it,
then for each mutant applies the edit, rebuilds incrementally and runs the
test suite (ctest, without the S3 label and the install test). A mutant is
caught when some test fails; a mutant that survives the whole suite means a
bug nothing defends, and makes the run fail. A mutant may name the tests
expected to catch it ("tests = REGEX"): those run first, and the whole
suite only when they pass. A mutant whose text no longer
matches the source is stale, which fails the run too: the list must follow
the code.

Usage: scripts/mutants.py [--quick] [--only ID[,ID...]] [--json OUT] [--scratch DIR] [--check]
                          [--in-place BUILD]
  --quick     only the mutants marked quick (the CI subset)
  --check     only check that every mutant's text matches the source once
  --in-place  mutate the working tree itself and rebuild BUILD, a build of it
              whose whole suite has just passed (CI's throwaway clone after
              scripts/test.sh): no copy, no second full build, no baseline
              run. Each file is restored after its mutant, also when the run
              is interrupted; the tree must have no uncommitted changes.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_list(path):
    """Mutants: '[id] quick?' headers, then 'file =', 'why =', '-' and '+' lines."""
    mutants, cur = [], None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith("["):
                head = line[1:].split("]", 1)
                cur = {"id": head[0], "quick": "quick" in head[1], "find": [], "replace": []}
                mutants.append(cur)
            elif line.startswith("file = "):
                cur["file"] = line[7:]
            elif line.startswith("why = "):
                cur["why"] = line[6:]
            elif line.startswith("tests = "):
                cur["tests"] = line[8:]
            elif line.startswith("- "):
                cur["find"].append(line[2:])
            elif line == "-":
                cur["find"].append("")
            elif line.startswith("+ "):
                cur["replace"].append(line[2:])
            elif line == "+":
                cur["replace"].append("")
            else:
                sys.exit(f"mutants.txt: cannot read line: {line}")
    for m in mutants:
        if not m.get("file") or not m["find"] or not m.get("why"):
            sys.exit(f"mutants.txt: mutant {m['id']} needs file, why and '-' lines")
        m["find"] = "\n".join(m["find"])
        m["replace"] = "\n".join(m["replace"])
    return mutants


def run(cmd, cwd, log, timeout=None):
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            out.write("timed out\n")
            return 124


def sync_tree(scratch):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    src = os.path.join(scratch, "src")
    for rel in filter(None, files):
        a, b = os.path.join(ROOT, rel), os.path.join(src, rel)
        if not os.path.isfile(a):
            continue
        os.makedirs(os.path.dirname(b), exist_ok=True)
        if not os.path.exists(b) or open(a, "rb").read() != open(b, "rb").read():
            shutil.copy2(a, b)
    return src


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--scratch", default=os.path.join(ROOT, "build-mutants"))
    ap.add_argument("--in-place", default="", metavar="BUILD")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()

    mutants = parse_list(os.path.join(ROOT, "scripts", "mutants.txt"))
    if args.check:
        stale = [m["id"] for m in mutants
                 if open(os.path.join(ROOT, m["file"]), encoding="utf-8").read().count(m["find"]) != 1]
        print(f"mutants: {len(mutants) - len(stale)} of {len(mutants)} match the source once")
        if stale:
            sys.exit("mutants: stale (their text does not match exactly once): " + ", ".join(stale))
        return
    if args.only:
        wanted = set(args.only.split(","))
        mutants = [m for m in mutants if m["id"] in wanted]
    elif args.quick:
        mutants = [m for m in mutants if m["quick"]]
    # What is tested is the tree as it is now (copied, unless --in-place).
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip())
    jobs = str(os.cpu_count() or 2)
    t0 = time.time()
    if args.in_place:
        # Mutating the tree in place is only safe where every file can be put
        # back exactly: a tree with no uncommitted changes.
        if dirty:
            sys.exit("mutants: --in-place needs a tree with no uncommitted changes")
        src, build = ROOT, os.path.abspath(args.in_place)
        log = os.path.join(build, "mutants.log")
        open(log, "w").close()
        if run(["cmake", "--build", build, "-j", jobs], ROOT, log) != 0:
            sys.exit(f"mutants: {build} does not build (see {log})")
    else:
        os.makedirs(args.scratch, exist_ok=True)
        src = sync_tree(args.scratch)
        build = os.path.join(args.scratch, "build")
        log = os.path.join(args.scratch, "mutants.log")
        open(log, "w").close()
        if run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                "-DCHUNKSTORE_BUILD_BENCH=OFF", "-DCHUNKSTORE_BUILD_EXAMPLES=OFF"], ROOT, log) != 0 or \
           run(["cmake", "--build", build, "-j", jobs], ROOT, log) != 0:
            sys.exit(f"mutants: the unmutated tree does not build (see {log})")
    suite = ["ctest", "--test-dir", build, "-j", jobs, "-LE", "s3", "-E", "install_consumer",
             "--stop-on-failure", "--timeout", "120"]
    if not args.in_place and run(suite, ROOT, log) != 0:
        sys.exit(f"mutants: the unmutated suite fails (see {log})")
    # SIGTERM (a CI timeout, a kill) unwinds like Ctrl-C, so the finally
    # below puts the mutated file back.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("mutants: terminated"))
    results = []
    for m in mutants:
        path = os.path.join(src, m["file"])
        original = open(path, encoding="utf-8").read()
        count = original.count(m["find"])
        start = time.time()
        caught_by = ""
        if count != 1:
            verdict = "stale"
        else:
            try:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(original.replace(m["find"], m["replace"]))
                if run(["cmake", "--build", build, "-j", jobs], ROOT, log) != 0:
                    verdict = "does-not-build"
                elif m.get("tests") and run(suite + ["-R", m["tests"]], ROOT, log, timeout=900) != 0:
                    verdict, caught_by = "caught", "its tests"
                else:
                    verdict = "caught" if run(suite, ROOT, log, timeout=1800) != 0 else "survived"
                    caught_by = "the suite" if verdict == "caught" else ""
            finally:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(original)
                # The next build must not take the mutant's file for current.
                os.utime(path, None)
        secs = time.time() - start
        results.append({"id": m["id"], "file": m["file"], "why": m["why"], "verdict": verdict,
                        "caught_by": caught_by, "seconds": round(secs, 1)})
        print(f"{verdict:15} {m['id']:40} {secs:6.0f} s  {caught_by:10} {m['why']}", flush=True)
    run(["cmake", "--build", build, "-j", jobs], ROOT, log)  # leave the build unmutated
    caught = sum(r["verdict"] == "caught" for r in results)
    bad = [r for r in results if r["verdict"] != "caught"]
    summary = {"commit": commit + ("+changes" if dirty else ""), "date": time.strftime("%Y-%m-%d"),
               "mutants": len(results), "caught": caught, "seconds": round(time.time() - t0),
               "results": results}
    print(f"mutants: {caught} of {len(results)} caught in {summary['seconds']} s at {summary['commit']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    if bad:
        print("mutants: not caught: " + ", ".join(f"{r['id']} ({r['verdict']})" for r in bad))
        sys.exit(1)


if __name__ == "__main__":
    main()

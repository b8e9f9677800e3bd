#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The measuring half of scripts/measure-cli.sh: the chunkstore command as
people run it, one fresh process per operation, against the yardstick H
(`openssl dgst -sha256` of the same file, a fresh process too) timed in
the same round. Per round and size: H, `publish` of a payload already
stored, a durable `publish` into a fresh store, `cat REF > /dev/null` and
`cat REF > FILE`, in an order that rotates every round. Each operation's
figure is H's time over its own (above 1: faster than hashing the file
once on one core), taken per round and summarised as median, min-max.
Two reference runs share the rounds: `dd ... conv=fsync` of the payload
into a new file (how fast the disk takes those bytes durably) and `dd` of
the payload into a new file without a sync, after the same page recycling
as the restore (the kernel's cost of filling the page cache, which
`cat > FILE` also pays). A third reference is SHA-256 of data in memory on
every core at once (`openssl speed -multi N`, one message at a time per
core), as the time the payload's bytes take. From the CPU times come two
floors: for `cat > /dev/null`, its own CPU time spread without loss over
every core; for `cat > FILE`, a verified read's CPU time plus the
page-cache fill's, spread likewise.
A command's fixed cost (start-up and exit) is measured apart: `--version`
and `cat` of a 4 KiB object, fresh processes in alternation.
Peak RSS (VmHWM) and CPU time (user + system) of every command come from
/usr/bin/time; CPU time over wall time says how many cores a command kept
busy, which is how a CPU-bound command shows. Writes
docs/measurements/cli-DATE.json (see scripts/report.py)."""
import argparse
import os
import shutil
import subprocess
import tempfile
import time

from compare_peers import make_payload, recycle_pages, stats, write_measurement


def timed(cmd, stdout=subprocess.DEVNULL):
    """(seconds, peak RSS KiB, CPU seconds: user + system) of cmd as a
    whole process."""
    with tempfile.NamedTemporaryFile("r") as t:
        os.sync()  # nothing earlier still being written back meanwhile
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%M %U %S"] + cmd, check=True, stdout=stdout,
                       stderr=subprocess.DEVNULL)
        secs = time.perf_counter() - start
        rss, user, system = t.read().strip().splitlines()[-1].split()
        return secs, int(rss), float(user) + float(system)


def measure(exe, work, size_mib, rounds):
    sub = os.path.join(work, f"{size_mib}m")
    os.makedirs(sub)
    big = make_payload(sub, size_mib, f"cli-{size_mib}")
    store = os.path.join(sub, "store")
    subprocess.run([exe, "--store", store, "-q", "init"], check=True)
    ref = subprocess.run([exe, "--store", store, "publish", big], check=True, capture_output=True,
                         text=True).stdout.split()[0]
    target = os.path.join(sub, "out.bin")
    fresh = os.path.join(sub, "fresh")

    def publish_fresh():
        subprocess.run([exe, "--store", fresh, "-q", "init"], check=True)  # untimed, like restic init
        r = timed([exe, "--store", fresh, "publish", big])
        shutil.rmtree(fresh)
        return r

    def cat_file():
        recycle_pages(sub, size_mib)  # every restore starts from just-freed pages
        with open(target, "wb") as out:
            r = timed([exe, "--store", store, "cat", ref], stdout=out)
        os.unlink(target)
        return r

    def dd(sync):
        copy = os.path.join(sub, "dd.bin")
        if not sync:
            recycle_pages(sub, size_mib)
        r = timed(["dd", f"if={big}", f"of={copy}", "bs=1M"] + (["conv=fsync"] if sync else []))
        os.unlink(copy)
        return r

    def hash_ceiling():
        """SHA-256 of data in memory on every core at once (`openssl speed
        -multi N`, 1 MiB blocks): how long hashing the payload's bytes
        takes when hashing is all there is, one message at a time per core
        (this store's reads hash two at a time, which can beat it; H
        itself is slower: `openssl dgst` also
        reads the file, in small pieces.) Returned as (time for the
        payload's bytes, no RSS, CPU = that time on every core)."""
        n = os.cpu_count()
        out = subprocess.run(["openssl", "speed", "-multi", str(n), "-evp", "sha256", "-bytes", "1048576",
                              "-seconds", "1"], check=True, capture_output=True, text=True).stdout
        rates = [line.split()[-1] for line in out.splitlines() if line.split()[:1] in (["sha256"], ["evp"])]
        if not rates or not rates[-1].endswith("k"):
            raise RuntimeError(f"cannot read openssl speed's output: {out[-500:]}")
        secs = size_mib * 1048576 / (float(rates[-1][:-1]) * 1000)
        return secs, 0, secs * n

    ops = {
        "H": lambda: timed(["openssl", "dgst", "-sha256", big]),
        "ceiling-hash-all-cores": hash_ceiling,
        "ceiling-durable-write": lambda: dd(True),
        "ceiling-page-cache-write": lambda: dd(False),
        "publish-again": lambda: timed([exe, "--store", store, "publish", big]),
        "publish-fresh": publish_fresh,
        "cat-null": lambda: timed([exe, "--store", store, "cat", ref]),
        "cat-file": cat_file,
    }
    names = list(ops)
    secs = {n: [] for n in names}
    rss = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for n in order:
            s, m, c = ops[n]()
            secs[n].append(s)
            rss[n].append(m)
            cpu[n].append(c)
    shutil.rmtree(sub)
    result = {"H_ms": stats([s * 1e3 for s in secs["H"]])}
    # The least time `cat > FILE` can take: the CPU time of a verified read
    # to /dev/null plus that of filling the page cache with the payload
    # (the no-sync dd), spread without loss over every core.
    cores = os.cpu_count()
    result["floor-cat-file"] = {"x_H": stats([h / ((a + b) / cores) for h, a, b in zip(
        secs["H"], cpu["cat-null"], cpu["ceiling-page-cache-write"])])}
    # What `cat > /dev/null` would take with no core ever waiting: its own
    # CPU time spread without loss over every core. The distance from the
    # command to it is waiting; from it to a target, work.
    result["floor-cat-null"] = {"x_H": stats([h / (c / cores) for h, c in zip(secs["H"], cpu["cat-null"])])}
    for n in names[1:]:
        result[n] = {"ms": stats([s * 1e3 for s in secs[n]]),
                     "x_H": stats([h / s for h, s in zip(secs["H"], secs[n])]),
                     "peak_rss_kib": stats(rss[n]),
                     "cores_busy": stats([c / s for c, s in zip(cpu[n], secs[n])])}
    return result


def fixed_cost(exe, work, runs=40):
    """What any command costs before it does any work: `--version`, and
    `cat` of a 4 KiB object to /dev/null (opening the store and the index
    too), each a fresh process started from here, in alternation; ms."""
    store = os.path.join(work, "fixed-cost")
    small = os.path.join(work, "fixed-cost.bin")
    with open(small, "wb") as f:
        f.write(os.urandom(4096))
    subprocess.run([exe, "--store", store, "-q", "publish", "--name", "small", small], check=True)
    cmds = {"version_ms": [exe, "--version"], "cat_4k_ms": [exe, "--store", store, "cat", "small"]}
    got = {k: [] for k in cmds}
    for _ in range(runs):
        for k, cmd in cmds.items():
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            got[k].append((time.perf_counter() - start) * 1000)
    shutil.rmtree(store)
    os.remove(small)
    return {k: stats(v) for k, v in got.items()} | {"runs": runs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes-mib", default="256,1024")
    ap.add_argument("--work", required=True)
    ap.add_argument("--commit", default="")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    out = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": args.commit, "rounds": args.rounds,
           "version": subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.split("\n")[0],
           "nproc": os.cpu_count(), "sizes": {}}
    out["fixed_cost"] = fixed_cost(exe, args.work)
    fc = out["fixed_cost"]
    print(f"fixed cost: --version {fc['version_ms']['median']:.1f} ms, cat of 4 KiB {fc['cat_4k_ms']['median']:.1f} ms")
    for size in [int(s) for s in args.sizes_mib.split(",")]:
        r = measure(exe, args.work, size, args.rounds)
        out["sizes"][str(size)] = r
        h = r["H_ms"]
        print(f"{size} MiB, {args.rounds} rounds; H = {h['median']:.1f} ms ({h['min']:.1f}-{h['max']:.1f})")
        for n, v in r.items():
            if n == "H_ms":
                continue
            x = v["x_H"]
            if "ms" not in v:  # a bound derived from the others
                print(f"  {n:14} {'':8} {'':2}  {x['median']:5.2f} x H ({x['min']:.2f}-{x['max']:.2f})")
                continue
            ms, m = v["ms"], v["peak_rss_kib"]
            print(f"  {n:14} {ms['median']:8.1f} ms  {x['median']:5.2f} x H ({x['min']:.2f}-{x['max']:.2f})"
                  f"  peak RSS {m['median'] / 1024:.1f} MiB  cores busy {v['cores_busy']['median']:.2f}")
    if not args.no_write:
        print("wrote", write_measurement("cli", out))


if __name__ == "__main__":
    main()

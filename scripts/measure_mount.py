#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The measuring half of scripts/measure-mount.sh: reading an object
through `chunkstore mount` against `chunkstore cat` of the same object.
One mount serves every round; rounds alternate which goes first.

- seq: `cat MOUNT/bench/big > /dev/null` against `chunkstore cat
  bench/big > /dev/null`, each a fresh process, the store's pack files
  warm in the page cache for both. Before each mount read the mounted
  file's own page cache is dropped (POSIX_FADV_DONTNEED on it), so every
  byte comes through FUSE and the verified reader, and dropped again
  after it, so that every read starts with the same memory in use. The
  figure per round
  is cat's time over the mount's (1: as fast as cat; the target is 0.7).
  The CPU time of both sides is taken too (the mount's: the reading
  `cat` and the daemon, from /proc), and with it the best ratio the
  mount's CPU cost allows: cat's time over the mount's CPU time spread
  over every core.
- random-4k: 4 KiB reads at random aligned offsets within the first 32
  MiB (POSIX_FADV_RANDOM: no kernel read-ahead). A first pass fills the
  store's chunk cache; the file's page cache is dropped, and the timed
  pass's reads each go to the daemon (fuse p50), then the same reads
  again come from the page cache (page-cache p50).
- base (with --base-exe): the same sequential read through a second
  mount of the same store served by another build, in the same rounds,
  in turn with the first; the figure per round is the base mount's time
  over this one's (above 1: this build is faster).
- half: the second half of the object read in order from its middle,
  `dd bs=1M skip=...` from the mount point against `chunkstore cat
  --offset` of the same bytes; cat's time over the mount's.
- first-4k over http: the store served by `chunkstore serve` and mounted
  as an http:// store (a bucket store to its clients) with an empty chunk
  cache; the pack GETs in the server's access log for the first 4 KiB
  read of the object (pread of 4096 bytes at 0 on a fresh descriptor).
The kernel read-ahead of each mount (sysfs) is recorded: `chunkstore
mount` raises it where it may (root).
Figures are medians with min-max over the rounds. Writes
docs/measurements/mount-DATE.json."""
import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

from compare_peers import make_payload, stats, write_measurement


def wait_mounted(path, proc):
    deadline = time.time() + 30
    while not os.path.ismount(path):
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"measure_mount: the mount did not come up: {proc.stderr.read().decode(errors='replace')}")
        time.sleep(0.05)


def drop_file_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def timed(cmd):
    """(wall seconds, CPU seconds: user + system) of cmd."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"measure_mount: {cmd} failed with {p.returncode}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def process_cpu(pid):
    """CPU seconds (user + system, every thread) process pid has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_ahead_kib(mountpoint):
    """The kernel's read-ahead for the mount at mountpoint, in KiB."""
    dev = os.stat(mountpoint).st_dev
    with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb") as f:
        return int(f.read())


def first_read_gets(exe, store, work):
    """The pack GETs (access-log lines of `chunkstore serve`) that the
    first 4 KiB read of bench/big costs through a mount of the store
    served over HTTP (an http:// store: a bucket store to its clients),
    with a cold chunk cache."""
    srv = subprocess.Popen([exe, "--store", store, "--json", "serve", "--listen", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    mnt = os.path.join(work, "mnt-http")
    os.makedirs(mnt, exist_ok=True)
    lines = []
    mount = None
    try:
        url = json.loads(srv.stdout.readline().decode())["url"]
        threading.Thread(target=lambda: [lines.append(x.decode(errors="replace")) for x in srv.stderr],
                         daemon=True).start()
        mount = subprocess.Popen([exe, "--store", url, "--cache-dir", os.path.join(work, "http-cache"), "-q",
                                  "mount", mnt], stderr=subprocess.PIPE)
        wait_mounted(mnt, mount)
        path = os.path.join(mnt, "bench", "big")
        os.stat(path)
        time.sleep(0.3)  # the server writes access lines within 100 ms
        before = len(lines)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, 4096, 0)
        finally:
            os.close(fd)
        time.sleep(0.5)
        return [x for x in lines[before:] if '"GET /blobs/packs/' in x]
    finally:
        if mount:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
            mount.wait(timeout=60)
        srv.terminate()
        srv.wait(timeout=60)


def random_reads(path, offsets):
    """(fuse p50 us, page-cache p50 us) for 4 KiB reads at offsets."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        for off in offsets:  # warms the store's chunk cache
            os.pread(fd, 4096, off)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        passes = []
        for _ in range(2):
            lat = []
            for off in offsets:
                t = time.perf_counter_ns()
                os.pread(fd, 4096, off)
                lat.append((time.perf_counter_ns() - t) / 1000)
            lat.sort()
            passes.append(lat[len(lat) // 2])
        return passes[0], passes[1]
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--reads", type=int, default=4000)
    ap.add_argument("--commit", default="")
    ap.add_argument("--base-exe", help="another build whose mount is timed beside this one's")
    ap.add_argument("--base-label", default="base")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    exe = os.path.abspath(args.exe)
    big = make_payload(args.work, args.size_mib, f"mount-{args.size_mib}")
    store = os.path.join(args.work, "store")
    mnt = os.path.join(args.work, "mnt")
    os.makedirs(mnt)
    subprocess.run([exe, "--store", store, "-q", "init"], check=True)
    subprocess.run([exe, "--store", store, "-q", "publish", big, "--name", "bench/big"], check=True)
    os.unlink(big)
    mount = subprocess.Popen([exe, "--store", store, "-q", "mount", mnt], stderr=subprocess.PIPE)
    path = os.path.join(mnt, "bench", "big")
    base = base_mnt = None
    if args.base_exe:
        base_mnt = os.path.join(args.work, "mnt-base")
        os.makedirs(base_mnt)
        base = subprocess.Popen([os.path.abspath(args.base_exe), "--store", store, "-q", "mount", base_mnt],
                                stderr=subprocess.PIPE)
    seq, fuse_p50, cache_p50, mount_ms, cat_ms = [], [], [], [], []
    mount_cpu, daemon_cpu, cat_cpu, bound = [], [], [], []
    base_ms, x_base = [], []
    half_ms, half_x = [], []
    try:
        wait_mounted(mnt, mount)
        ra = read_ahead_kib(mnt)
        if base:
            wait_mounted(base_mnt, base)
            base_ra = read_ahead_kib(base_mnt)
        subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL)  # the packs into the page cache
        drop_file_cache(path)
        if base:  # its daemon warmed up as this one's
            subprocess.run(["cat", os.path.join(base_mnt, "bench", "big")], check=True, stdout=subprocess.DEVNULL)
            drop_file_cache(os.path.join(base_mnt, "bench", "big"))
        rng = random.Random(11)
        for rnd in range(args.rounds):
            # The mounted file's page cache is dropped after each read too:
            # every read starts with the same memory in use, whichever went
            # before it.
            def via_mount():
                drop_file_cache(path)
                before = process_cpu(mount.pid)
                secs, reader = timed(["cat", path])
                cpu = process_cpu(mount.pid) - before
                drop_file_cache(path)
                return secs, reader, cpu

            def via_cat():
                return timed([exe, "--store", store, "cat", "bench/big"])

            def via_base():
                base_path = os.path.join(base_mnt, "bench", "big")
                drop_file_cache(base_path)
                secs = timed(["cat", base_path])[0]
                drop_file_cache(base_path)
                return secs

            # The second half alone: a file read in order from its middle.
            half = (args.size_mib // 2) << 20

            def via_mount_half():
                drop_file_cache(path)
                secs = timed(["dd", f"if={path}", "of=/dev/null", "bs=1M", f"skip={args.size_mib // 2}",
                              "status=none"])[0]
                drop_file_cache(path)
                return secs

            def via_cat_half():
                return timed([exe, "--store", store, "cat", "bench/big", "--offset", str(half)])[0]

            if rnd % 2 == 0:
                mh, ch = via_mount_half(), via_cat_half()
            else:
                ch, mh = via_cat_half(), via_mount_half()
            half_x.append(ch / mh)
            half_ms.append(mh * 1e3)
            if rnd % 2 == 0:
                (m, reader, daemon), (c, cc) = via_mount(), via_cat()
                b = via_base() if base else None
            else:
                b = via_base() if base else None
                (c, cc), (m, reader, daemon) = via_cat(), via_mount()
            if b is not None:
                base_ms.append(b * 1e3)
                x_base.append(b / m)
            mount_ms.append(m * 1e3)
            cat_ms.append(c * 1e3)
            seq.append(c / m)
            mount_cpu.append(reader + daemon)
            daemon_cpu.append(daemon)
            cat_cpu.append(cc)
            # The mount's read cannot end before its CPU time spread over
            # every core: the best ratio its present cost allows.
            bound.append(c / ((reader + daemon) / os.cpu_count()))
            span = min(32 << 20, args.size_mib << 20) // 4096
            offsets = [rng.randrange(span) * 4096 for _ in range(args.reads)]
            f, p = random_reads(path, offsets)
            fuse_p50.append(f)
            cache_p50.append(p)
            print(f"round {rnd + 1}: mount {m * 1e3:.0f} ms, cat {c * 1e3:.0f} ms ({c / m:.2f}x); "
                  + (f"{args.base_label}'s mount {b * 1e3:.0f} ms ({b / m:.2f}x); " if b is not None else "")
                  + f"4 KiB p50 through FUSE {f:.1f} us, from the page cache {p:.1f} us", flush=True)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        mount.wait(timeout=60)
        if base:
            subprocess.run(["fusermount3", "-u", base_mnt], check=False)
            base.wait(timeout=60)
    first_gets = first_read_gets(exe, store, args.work)
    out = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": args.commit, "rounds": args.rounds,
           "size_mib": args.size_mib, "nproc": os.cpu_count(),
           "version": subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.split("\n")[0],
           "seq_mount_ms": stats(mount_ms), "seq_cat_ms": stats(cat_ms), "seq_x_cat": stats(seq),
           "seq_mount_cpu_s": stats(mount_cpu), "seq_daemon_cpu_s": stats(daemon_cpu),
           "seq_cat_cpu_s": stats(cat_cpu), "seq_x_cat_cpu_bound": stats(bound),
           "random_4k_fuse_p50_us": stats(fuse_p50), "random_4k_page_cache_p50_us": stats(cache_p50),
           "half_mount_ms": stats(half_ms), "half_x_cat": stats(half_x),
           "read_ahead_kib": ra, "mount_exit": mount.returncode,
           "http_first_4k_pack_gets": len(first_gets),
           "http_first_4k_pack_bytes": sum(int(line.split()[-2]) for line in first_gets)}
    if base:
        out.update({"base": args.base_label, "base_read_ahead_kib": base_ra, "seq_base_mount_ms": stats(base_ms),
                    "seq_x_base": stats(x_base)})
    s, f, p = out["seq_x_cat"], out["random_4k_fuse_p50_us"], out["random_4k_page_cache_p50_us"]
    print(f"{args.size_mib} MiB, {args.rounds} rounds: sequential {s['median']:.2f}x cat ({s['min']:.2f}-{s['max']:.2f}); "
          f"4 KiB random p50 {f['median']:.1f} us through FUSE ({f['min']:.1f}-{f['max']:.1f}), "
          f"{p['median']:.1f} us from the page cache ({p['min']:.1f}-{p['max']:.1f})")
    h = out["half_x_cat"]
    print(f"second half from the middle: {h['median']:.2f}x cat --offset ({h['min']:.2f}-{h['max']:.2f})")
    print(f"first 4 KiB over http, cold: {len(first_gets)} pack GETs ({out['http_first_4k_pack_bytes']} bytes)")
    if base:
        x = out["seq_x_base"]
        print(f"against {args.base_label}'s mount: {x['median']:.2f}x ({x['min']:.2f}-{x['max']:.2f})")
    if not args.no_write:
        print("wrote", write_measurement("mount", out))


if __name__ == "__main__":
    main()

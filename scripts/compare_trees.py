#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""chunkstore, restic, borg and casync on a real directory tree: the Linux
6.1 source tree, unpacked from Debian's linux-source-6.1 (about 80,000
files). For each tool, every round, in rotating order: publish of the tree
into a fresh repository (wall clock, CPU seconds, peak RSS), publish of the
same unchanged tree again, and restore into an empty directory on a freshly
made ext4 file system (a loop-mounted image, so that no tool inherits the
inode bitmaps another one's deletions left: ext4 skips recently deleted
inodes at a cost that depends on what ran before). For chunkstore also a
restore over a copy in which 100 files were changed, and the restored
trees are compared with the source: `diff -r`, and a listing of every
path with its type, permission bits, mtime (ns) and link target.

Beside them, the work no tool can skip, in the same run (the "floors"):
the kernel's own cost of reading every file (system time of a loop that
reads each into one reused buffer) and of creating the tree (system time of
`tar -x` of the same tree into a fresh file system); and, from
chunkstore-bench's codec-* operations on the tree, the CPU time of the
SHA-256 of every chunk, of compressing each with the store's default codec
and of decoding it. A publish that hashes and compresses cannot take less
CPU than read + hash + compress; a restore that decodes and verifies, less
than create + decode + hash.
Writes docs/measurements/trees-DATE.json (see scripts/report.py)."""
import argparse
import datetime
import glob
import json
import os
import shutil
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import ENV, ROOT, tool_versions, write_measurement  # noqa: E402
from compare_real import download  # noqa: E402

KERNEL = "6.1.192-3"  # the linux-source-6.1 release


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def run_sys(cmd):
    """Runs cmd (a shell line) under /usr/bin/time: its system CPU seconds."""
    with tempfile.NamedTemporaryFile("r") as t:
        os.sync()
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%S", "sh", "-c", cmd], env=ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return float(t.read().strip().splitlines()[-1])


# Reads every regular file below argv[1] into one reused buffer: the
# kernel's cost of reading the tree, with no allocation per file.
READ_ALL = """
import os, sys
buf = bytearray(1 << 20)
view = memoryview(buf)
for root, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        p = os.path.join(root, f)
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # a symlink
        while os.readv(fd, [view]) == len(buf):
            pass
        os.close(fd)
"""


def codec_floors(bench, src, codecs):
    """CPU seconds (one thread) of the SHA-256 of every chunk of the tree
    and of each codec's compress and decode: chunkstore-bench's codec-*."""
    with tempfile.NamedTemporaryFile("r", suffix=".json") as t:
        sh([bench, "--size", "1MiB", "--codec-input", src, "--only", "^codec-", "--warmups", "1", "--samples",
            "3", "--json", t.name] + [a for c in codecs for a in ("--codecs", c)], stdout=subprocess.DEVNULL)
        res = {r["name"]: r for r in json.load(open(t.name))["results"]}
    out = {"sha256_s": res["codec-sha256"]["median_ms"] / 1000}
    for c in codecs:
        out[f"compress_{c}_s"] = res[f"codec-{c}-compress"]["median_ms"] / 1000
        out[f"decode_{c}_s"] = res[f"codec-{c}-decode"]["median_ms"] / 1000
    return out


def run(cmd, cwd=None):
    """Runs cmd under /usr/bin/time after a sync: (wall s, CPU s, peak RSS KiB)."""
    with tempfile.NamedTemporaryFile("r") as t:
        os.sync()
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%U %S %M"] + cmd, cwd=cwd, env=ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        user, system, rss = t.read().strip().splitlines()[-1].split()
        return wall, float(user) + float(system), int(rss)


def linux_tree(cache):
    """The unpacked source tree (mtimes as the tarball has them)."""
    out = os.path.join(cache, f"linux-tree-{KERNEL}")
    if not os.path.isdir(out):
        deb = download(f"linux-source-6.1={KERNEL}", os.path.join(cache, "debs"))
        x = os.path.join(cache, "x-tree")
        shutil.rmtree(x, ignore_errors=True)
        sh(["dpkg-deb", "-x", deb, x])
        [xz] = glob.glob(os.path.join(x, "usr/src/linux-source-*.tar.xz"))
        part = out + ".part"
        shutil.rmtree(part, ignore_errors=True)
        os.makedirs(part)
        sh(["tar", "-xJf", xz, "-C", part])
        os.rename(part, out)
        shutil.rmtree(x)
    return out


def tree_size(path):
    files, size = 0, 0
    for root, _, names in os.walk(path):
        for n in names:
            p = os.path.join(root, n)
            if os.path.isfile(p) and not os.path.islink(p):
                files += 1
                size += os.path.getsize(p)
    return files, size


def listing(path):
    """Every path below path: type, mode bits, mtime ns, link target."""
    out = {}
    for root, dirs, names in os.walk(path):
        for n in dirs + names:
            p = os.path.join(root, n)
            st = os.lstat(p)
            kind = "l" if os.path.islink(p) else "d" if os.path.isdir(p) else "f"
            out[os.path.relpath(p, path)] = (kind, 0 if kind == "l" else st.st_mode & 0o7777, st.st_mtime_ns,
                                             os.readlink(p) if kind == "l" else None)
    return out


class Fresh:
    """A new ext4 file system on a loop-mounted image for each restore."""

    def __init__(self, work, size_gib):
        self.image = os.path.join(work, "restore.ext4")
        self.mnt = os.path.join(work, "mnt")
        self.size = size_gib
        os.makedirs(self.mnt, exist_ok=True)
        self.mounted = False

    def make(self):
        self.unmount()
        with open(self.image, "wb") as f:
            f.truncate(self.size << 30)
        sh(["mkfs.ext4", "-q", "-F", self.image])
        sh(["mount", "-o", "loop", self.image, self.mnt])
        self.mounted = True
        return self.mnt

    def unmount(self):
        if self.mounted:
            subprocess.run(["umount", self.mnt])
            self.mounted = False


class Tool:
    def __init__(self, work, exe=None):
        self.repo = os.path.join(work, "repo-" + self.name)
        self.exe = exe
        self.n = 0


class Chunkstore(Tool):
    name = "chunkstore"

    def init(self):
        sh([self.exe, "--store", self.repo, "-q", "init"], env=ENV, capture_output=True)

    def publish(self, path):
        return run([self.exe, "--store", self.repo, "-q", "publish", "--name", "t", path])

    def restore(self, target):
        out = os.path.join(target, "out")
        return run([self.exe, "--store", self.repo, "-q", "restore", "t", out]), out


class Restic(Tool):
    name = "restic"

    def init(self):
        sh(["restic", "init", "--repo", self.repo], env=ENV, capture_output=True)

    def publish(self, path):
        self.last = path
        return run(["restic", "backup", "--repo", self.repo, "--quiet", path])

    def restore(self, target):
        t = run(["restic", "restore", "latest", "--repo", self.repo, "--target", target])
        return t, os.path.join(target, self.last.lstrip("/"))


class Borg(Tool):
    name = "borg"

    def init(self):
        sh(["borg", "init", "--encryption", "none", self.repo], env=ENV, capture_output=True)

    def publish(self, path):
        self.n += 1
        self.last = os.path.basename(path)
        return run(["borg", "create", f"{self.repo}::a{self.n}", self.last], cwd=os.path.dirname(path))

    def restore(self, target):
        return run(["borg", "extract", f"{self.repo}::a{self.n}"], cwd=target), os.path.join(target, self.last)


class Casync(Tool):
    name = "casync"

    def init(self):
        os.makedirs(self.repo)

    def publish(self, path):
        self.n += 1
        self.index = os.path.join(self.repo, f"i{self.n}.caidx")
        return run(["casync", "make", f"--store={self.repo}/store", self.index, path])

    def restore(self, target):
        out = os.path.join(target, "out")
        return run(["casync", "extract", f"--store={self.repo}/store", self.index, out]), out


def change_files(root, n):
    """Appends a line to the first n .c files in path order: a copy with n files changed."""
    changed = []
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".c") and len(changed) < n:
                p = os.path.join(dirpath, name)
                with open(p, "a") as f:
                    f.write("/* changed */\n")
                changed.append(p)
    return changed


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunkstore", required=True)
    ap.add_argument("--bench", help="chunkstore-bench, for the hashing and codec floors (none: not measured)")
    ap.add_argument("--codecs", default="zstd:3,zstd:1",
                    help="codecs of the floors, the store's default first (default zstd:3,zstd:1)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default=os.environ.get("CHUNKSTORE_REALDATA", "/var/tmp/chunkstore-realdata"))
    ap.add_argument("--tools", default="chunkstore,restic,borg,casync")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("compare_trees: needs root, to mount a fresh ext4 file system for each restore")
    exe = os.path.abspath(args.chunkstore)
    os.makedirs(args.cache, exist_ok=True)
    src = linux_tree(args.cache)
    files, size = tree_size(src)
    source_listing = listing(src)
    kinds = [k for k in (Chunkstore, Restic, Borg, Casync) if k.name in args.tools.split(",")]
    work = tempfile.mkdtemp(prefix="chunkstore-trees-", dir=args.cache)
    fresh = Fresh(work, max(4, (size >> 30) * 3 + 2))
    keys = ["publish_s", "publish_cpu_s", "publish_rss_kib", "republish_s", "restore_s", "restore_cpu_s",
            "restore_rss_kib", "restore_over_changed_s", "metadata_identical"]
    results = {k.name: {key: [] for key in keys} for k in kinds}
    floors = {"read_sys_s": [], "create_sys_s": []}
    tar = os.path.join(work, "tree.tar")
    sh(["tar", "-cf", tar, "-C", src, "."])
    ratios = {"publish": [], "republish": [], "restore": [], "over_changed_vs_full": []}
    try:
        for rnd in range(args.rounds):
            # Every file of the source read once, untimed: every tool starts
            # from the page cache.
            # (Through a pipe: GNU tar skips reading file contents when
            # its archive is /dev/null.)
            subprocess.run(f"tar -cf - -C {shlex.quote(src)} . | cat > /dev/null", shell=True, check=True)
            order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
            this = {}
            for kind in order:
                rd = os.path.join(work, f"r{rnd}")
                os.makedirs(rd, exist_ok=True)
                tool = kind(rd, exe)
                tool.init()
                r = results[tool.name]
                wall, cpu, rss = tool.publish(src)
                r["publish_s"].append(wall)
                r["publish_cpu_s"].append(cpu)
                r["publish_rss_kib"].append(rss)
                r["republish_s"].append(tool.publish(src)[0])
                (wall, cpu, rss), out = tool.restore(fresh.make())
                r["restore_s"].append(wall)
                r["restore_cpu_s"].append(cpu)
                r["restore_rss_kib"].append(rss)
                if subprocess.run(["diff", "-r", "-q", "--no-dereference", src, out],
                                  stdout=subprocess.DEVNULL).returncode != 0:
                    raise SystemExit(f"compare_trees: {tool.name} restored other content")
                r["metadata_identical"].append(listing(out) == source_listing)
                if tool.name == "chunkstore":
                    change_files(out, 100)
                    wall, _, _ = tool.restore(fresh.mnt)[0]
                    r["restore_over_changed_s"].append(wall)
                    if listing(out) != source_listing:
                        raise SystemExit("compare_trees: the restore over a changed copy left it different")
                    ratios["over_changed_vs_full"].append(r["restore_s"][-1] / wall)
                fresh.unmount()
                this[tool.name] = (r["publish_s"][-1], r["republish_s"][-1], r["restore_s"][-1])
                shutil.rmtree(rd)
            floors["read_sys_s"].append(run_sys(f"python3 -c {shlex.quote(READ_ALL)} {shlex.quote(src)}"))
            subprocess.run(f"cat {shlex.quote(tar)} > /dev/null", shell=True, check=True)
            dest = os.path.join(fresh.make(), "out")
            os.makedirs(dest)
            floors["create_sys_s"].append(run_sys(f"tar -xf {shlex.quote(tar)} -C {shlex.quote(dest)}"))
            fresh.unmount()
            if "chunkstore" in this and len(this) > 1:
                peers = [v for k, v in this.items() if k != "chunkstore"]
                cs = this["chunkstore"]
                for i, what in enumerate(["publish", "republish", "restore"]):
                    ratios[what].append(min(p[i] for p in peers) / cs[i])
            print(f"compare_trees: round {rnd + 1} done", flush=True)
        codecs = args.codecs.split(",")
        cpu = codec_floors(args.bench, src, codecs) if args.bench else {}
        out = {
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rounds": args.rounds,
            "nproc": os.cpu_count(),
            "git_commit": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                         capture_output=True, text=True).stdout.strip(),
            "dataset": {"package": f"linux-source-6.1={KERNEL}", "files": files, "bytes": size,
                        "entries": len(source_listing),
                        "how": "dpkg-deb -x, then tar -xJf of usr/src/linux-source-6.1.tar.xz (mtimes kept)"},
            "versions": tool_versions(exe),
            "results": {t: {k: (stats(v) if v and not isinstance(v[0], bool) else v) for k, v in r.items() if v}
                        for t, r in results.items()},
            "ratios_to_fastest_peer": {k: stats(v) for k, v in ratios.items() if v},
            "floors": dict({k: stats(v) for k, v in floors.items()}, codecs=codecs, **cpu),
            "notes": "defaults of every tool (restic: encryption, zstd auto; borg: --encryption none, lz4; casync: "
                     "zstd); wall clock and CPU (user + system) of each whole process after a sync; the source "
                     "tree read once per round before timing (page cache); republish = the same tree again "
                     "into the same repository; restore into a new ext4 file system (loop-mounted image) each "
                     "time; restore over a changed copy = chunkstore's restore again after appending a line to "
                     "100 .c files of its first restore; ratios = fastest other tool's time / chunkstore's, per "
                     "round (over_changed_vs_full: full restore time / the restore over the changed copy)",
        }
        print("compare_trees: wrote", write_measurement("trees", out))
    finally:
        fresh.unmount()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

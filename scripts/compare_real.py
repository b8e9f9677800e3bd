#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""chunkstore, restic, borg and casync on real data built from Debian
packages: two releases of the Linux 6.1 source tarball, the libLLVM 14, 15
and 16 shared libraries, and a 2 GiB ext4 image made from /usr/share with a
copy that has 50 scattered 4 KiB writes. For each tool and data set: ingest
of the first version (MiB/s, CPU-seconds, peak RSS), stored bytes, bytes the
later versions add, restore of the last version (MiB/s, allocated bytes),
checked byte for byte against its input. Tools rotate order every round.
Writes docs/measurements/real-DATE.json (see scripts/report.py)."""
import argparse
import datetime
import glob
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_peers import ENV, ROOT, du, recycle_pages, tool_versions, write_measurement  # noqa: E402

KERNELS = ["6.1.190-1", "6.1.192-3"]  # linux-source-6.1 releases, older first
LLVMS = ["libllvm14", "libllvm15", "libllvm16"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def run(cmd, cwd=None):
    """Runs cmd under /usr/bin/time: (wall s, CPU s, peak RSS KiB)."""
    with tempfile.NamedTemporaryFile("r") as t:
        os.sync()
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%U %S %M"] + cmd, cwd=cwd, env=ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        user, system, rss = t.read().strip().splitlines()[-1].split()
        return wall, float(user) + float(system), int(rss)


def allocated(path):
    return os.stat(path).st_blocks * 512


def download(pkg, where):
    """apt-get download into where; returns the .deb's path."""
    os.makedirs(where, exist_ok=True)
    name = pkg.split("=")[0]
    have = glob.glob(os.path.join(where, name + "_*.deb"))
    version = pkg.split("=")[1].replace(":", "%3a") if "=" in pkg else None
    for h in have:
        if version is None or f"_{version}_" in h:
            return h
    sh(["apt-get", "download", "-q", pkg], cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = [h for h in glob.glob(os.path.join(where, name + "_*.deb")) if h not in have]
    return got[0]


def kernel_tar(cache, version):
    out = os.path.join(cache, f"linux-{version}.tar")
    if not os.path.exists(out):
        deb = download(f"linux-source-6.1={version}", os.path.join(cache, "debs"))
        x = os.path.join(cache, "x-" + version)
        sh(["dpkg-deb", "-x", deb, x])
        [xz] = glob.glob(os.path.join(x, "usr/src/linux-source-*.tar.xz"))
        with open(out + ".part", "wb") as f:
            sh(["xz", "-dc", xz], stdout=f)
        os.rename(out + ".part", out)
        shutil.rmtree(x)
    return out


def llvm_lib(cache, pkg):
    out = os.path.join(cache, pkg + ".so")
    if not os.path.exists(out):
        deb = download(pkg, os.path.join(cache, "debs"))
        x = os.path.join(cache, "x-" + pkg)
        sh(["dpkg-deb", "-x", deb, x])
        libs = [p for p in glob.glob(os.path.join(x, "usr/lib/**/libLLVM*.so*"), recursive=True)
                if not os.path.islink(p)]
        shutil.move(libs[0], out)
        shutil.rmtree(x)
    return out


def ext4_images(cache):
    """A 2 GiB ext4 image of /usr/share (fixed UUID, hash seed and times)
    and a copy with 50 random 4 KiB blocks rewritten (seeded)."""
    a, b = os.path.join(cache, "image-a.ext4"), os.path.join(cache, "image-b.ext4")
    if not os.path.exists(b):
        env = dict(os.environ, E2FSPROGS_FAKE_TIME="1700000000")
        sh(["truncate", "-s", "2G", a + ".part"])
        sh(["mkfs.ext4", "-q", "-F", "-b", "4096", "-U", "6b3c0e9e-7d7a-4b5e-9c51-2f7c0b1d4e21",
            "-E", "hash_seed=0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f,lazy_itable_init=0,lazy_journal_init=0",
            "-d", "/usr/share", a + ".part"], env=env, stdout=subprocess.DEVNULL)
        os.rename(a + ".part", a)
        sh(["cp", "--sparse=always", a, b + ".part"])
        rnd = random.Random(50)
        with open(b + ".part", "r+b") as f:
            for _ in range(50):
                f.seek(rnd.randrange((2 << 30) // 4096) * 4096)
                f.write(rnd.randbytes(4096))
        os.rename(b + ".part", b)
    return a, b


def datasets(cache):
    """name -> list of versions (paths), oldest first."""
    return {
        "kernel-tar": [kernel_tar(cache, v) for v in KERNELS],
        "llvm-libs": [llvm_lib(cache, p) for p in LLVMS],
        "ext4-image": list(ext4_images(cache)),
    }


def deb_versions(cache, names):
    out = []
    for n in names:
        for deb in sorted(glob.glob(os.path.join(cache, "debs", n + "_*.deb"))):
            v = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True).stdout.strip()
            out.append(f"{n}={v}")
    return out


def provenance(cache, sets):
    out = {"kernel-tar": {"packages": deb_versions(cache, ["linux-source-6.1"]),
                          "how": "dpkg-deb -x, then xz -dc of usr/src/linux-source-6.1.tar.xz"},
           "llvm-libs": {"packages": deb_versions(cache, LLVMS), "how": "dpkg-deb -x, the libLLVM-N.so file of each"},
           "ext4-image": {"how": "truncate -s 2G; mkfs.ext4 -b 4096 with a fixed UUID and hash seed, "
                                 "E2FSPROGS_FAKE_TIME=1700000000, -d /usr/share; the copy has 50 blocks of "
                                 "4 KiB at random.Random(50) offsets rewritten with random bytes",
                          "source_bytes": int(subprocess.run(["du", "-sb", "/usr/share"], capture_output=True,
                                                             text=True).stdout.split()[0])}}
    for name, paths in sets.items():
        out[name]["versions"] = [{"file": os.path.basename(p), "bytes": os.path.getsize(p),
                                  "allocated": allocated(p)} for p in paths]
    return {k: v for k, v in out.items() if k in sets}


class Tool:
    def __init__(self, work, exe=None):
        self.repo = os.path.join(work, "repo-" + self.name)
        self.exe = exe
        self.n = 0


class Chunkstore(Tool):
    name = "chunkstore"

    def init(self):
        sh([self.exe, "--store", self.repo, "-q", "init"], env=ENV, capture_output=True)

    def ingest(self, path):
        return run([self.exe, "--store", self.repo, "publish", "--name", "v", path])

    def restore(self, target):
        out = os.path.join(target, "out")
        return run(["sh", "-c", f'"{self.exe}" --store "{self.repo}" cat v > "{out}"']), out


class Restic(Tool):
    name = "restic"

    def init(self):
        sh(["restic", "init", "--repo", self.repo], env=ENV, capture_output=True)

    def ingest(self, path):
        self.last = path
        return run(["restic", "backup", "--repo", self.repo, "--quiet", path])

    def restore(self, target):
        t = run(["restic", "restore", "latest", "--repo", self.repo, "--target", target])
        return t, os.path.join(target, self.last.lstrip("/"))


class Borg(Tool):
    name = "borg"

    def init(self):
        sh(["borg", "init", "--encryption", "none", self.repo], env=ENV, capture_output=True)

    def ingest(self, path):
        self.n += 1
        self.last = os.path.basename(path)
        return run(["borg", "create", f"{self.repo}::a{self.n}", self.last], cwd=os.path.dirname(path))

    def restore(self, target):
        return run(["borg", "extract", f"{self.repo}::a{self.n}"], cwd=target), os.path.join(target, self.last)


class Casync(Tool):
    name = "casync"

    def init(self):
        os.makedirs(self.repo)

    def ingest(self, path):
        self.n += 1
        self.index = os.path.join(self.repo, f"i{self.n}.caibx")
        return run(["casync", "make", f"--store={self.repo}/store", self.index, path])

    def restore(self, target):
        out = os.path.join(target, "out")
        return run(["casync", "extract", f"--store={self.repo}/store", self.index, out]), out


def same_bytes(a, b):
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunkstore", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default=os.environ.get("CHUNKSTORE_REALDATA", "/var/tmp/chunkstore-realdata"))
    ap.add_argument("--only", default="", help="comma-separated data sets (default all)")
    ap.add_argument("--tools", default="chunkstore,restic,borg,casync")
    args = ap.parse_args()
    exe = os.path.abspath(args.chunkstore)
    os.makedirs(args.cache, exist_ok=True)
    sets = datasets(args.cache)
    if args.only:
        sets = {k: v for k, v in sets.items() if k in args.only.split(",")}
    kinds = [k for k in (Chunkstore, Restic, Borg, Casync) if k.name in args.tools.split(",")]
    work = tempfile.mkdtemp(prefix="chunkstore-real-", dir=args.cache)
    keys = ["ingest_mib_s", "ingest_cpu_s", "ingest_rss_kib", "stored_bytes", "added_bytes", "restore_mib_s",
            "restore_allocated", "ratio_ingest_to_best_peer", "ratio_restore_to_best_peer"]
    results = {d: {k.name: {key: [] for key in keys} for k in kinds} for d in sets}
    yard = {d: [] for d in sets}
    try:
        for rnd in range(args.rounds):
            order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
            for dname, versions in sets.items():
                mib = os.path.getsize(versions[0]) / (1 << 20)
                wall, _, _ = run(["openssl", "dgst", "-sha256", versions[-1]])
                yard[dname].append(os.path.getsize(versions[-1]) / (1 << 20) / wall)
                this_round = {}
                for kind in order:
                    rd = os.path.join(work, f"r{rnd}")
                    os.makedirs(rd, exist_ok=True)
                    tool = kind(rd, exe)
                    tool.init()
                    r = results[dname][tool.name]
                    wall, cpu, rss = tool.ingest(versions[0])
                    r["ingest_mib_s"].append(mib / wall)
                    r["ingest_cpu_s"].append(cpu)
                    r["ingest_rss_kib"].append(rss)
                    stored = du(tool.repo)
                    r["stored_bytes"].append(stored)
                    added = []
                    for v in versions[1:]:
                        before = du(tool.repo)
                        tool.ingest(v)
                        added.append(du(tool.repo) - before)
                    r["added_bytes"].append(added)
                    target = os.path.join(rd, "restore-" + tool.name)
                    os.makedirs(target)
                    last_mib = os.path.getsize(versions[-1]) / (1 << 20)
                    recycle_pages(rd, int(last_mib))
                    (wall, _, _), out = tool.restore(target)
                    if not same_bytes(out, versions[-1]):
                        raise SystemExit(f"{tool.name} restored other bytes for {dname}")
                    r["restore_mib_s"].append(last_mib / wall)
                    r["restore_allocated"].append(allocated(out))
                    this_round[tool.name] = (r["ingest_mib_s"][-1], r["restore_mib_s"][-1])
                    shutil.rmtree(rd)
                if "chunkstore" in this_round and len(this_round) > 1:
                    peers = [v for k, v in this_round.items() if k != "chunkstore"]
                    cs = results[dname]["chunkstore"]
                    cs["ratio_ingest_to_best_peer"].append(this_round["chunkstore"][0] / max(p[0] for p in peers))
                    cs["ratio_restore_to_best_peer"].append(this_round["chunkstore"][1] / max(p[1] for p in peers))
                print(f"compare_real: round {rnd + 1} {dname} done", flush=True)
        out = {
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rounds": args.rounds,
            "git_commit": subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                                         capture_output=True, text=True).stdout.strip(),
            "datasets": provenance(args.cache, sets),
            "yardstick_mib_per_s": {d: stats(v) for d, v in yard.items()},
            "versions": dict(tool_versions(exe), chunkstore_compression=subprocess.run(
                [exe, "--version"], capture_output=True, text=True).stdout.split("\n")[1]),
            "results": {d: {t: {k: (stats(v) if v and not isinstance(v[0], list) else v) for k, v in r.items() if v}
                            for t, r in tools.items()} for d, tools in results.items()},
            "notes": "defaults of every tool (chunkstore: its default compression; restic: zstd auto with "
                     "encryption; borg: --encryption none, lz4; casync: zstd); wall clock and CPU (user + "
                     "system) of each whole process; inputs in the page cache; restore = the last version, "
                     "compared with cmp afterwards (untimed); stored and added bytes = the repository's file "
                     "sizes (du of apparent sizes); yardstick = openssl dgst -sha256 of the last version",
        }
        print("compare_real: wrote", write_measurement("real", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

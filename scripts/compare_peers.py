#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side ingest, re-ingest, restore and small-file runs of chunkstore,
restic, borg and casync on identical deterministic inputs, alternating the
tool order every round. Each command is timed as a whole process (wall
clock) and its peak RSS read with /usr/bin/time. Writes
docs/measurements/peers-DATE.json (see scripts/report.py)."""
import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, RESTIC_PASSWORD="bench", BORG_PASSPHRASE="", BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK="yes",
           BORG_RELOCATED_REPO_ACCESS_IS_OK="yes")


def run(cmd, cwd=None):
    """Runs cmd under /usr/bin/time; returns (seconds, peak RSS KiB)."""
    with tempfile.NamedTemporaryFile("r") as t:
        os.sync()  # nothing earlier still being written back meanwhile
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-o", t.name, "-f", "%M"] + cmd, cwd=cwd, env=ENV, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        secs = time.perf_counter() - start
        return secs, int(t.read().strip().splitlines()[-1])


def recycle_pages(where, mib):
    """Writes and deletes a file of the restore's size, untimed. On this
    virtual machine, page-cache pages the kernel has not used for a while
    cost several times the system time to fill as pages it has just freed,
    and which kind a restore gets depends on what ran before it; this gives
    every tool's restore the same start."""
    scratch = os.path.join(where, "recycle.bin")
    block = b"\0" * (1 << 20)
    with open(scratch, "wb") as f:
        for _ in range(mib):
            f.write(block)
    os.unlink(scratch)


def du(path):
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.path.getsize(p)
    return total


def make_payload(work, size_mib, seed):
    """work/input.bin: deterministic pseudo-random bytes from AES-CTR over
    zeros. Returns its path."""
    big = os.path.join(work, "input.bin")
    with open(big, "wb") as f:
        p = subprocess.Popen(["openssl", "enc", "-aes-256-ctr", "-nosalt", "-pbkdf2", "-pass", f"pass:{seed}",
                              "-in", "/dev/zero"], stdout=subprocess.PIPE)
        remaining = size_mib << 20
        while remaining:
            chunk = p.stdout.read(min(remaining, 1 << 20))
            f.write(chunk)
            remaining -= len(chunk)
        p.kill()
        p.wait()
    return big


def edited_copy(src, dst, at):
    """dst: a copy of src with the byte at offset `at` changed."""
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5A]))


def make_inputs(work, size_mib, seed):
    """The payload (make_payload), a copy with one byte changed in its
    middle, and 2,000 files of 256 bytes taken from its start."""
    big = make_payload(work, size_mib, seed)
    edited = os.path.join(work, "edited", "input.bin")
    os.makedirs(os.path.dirname(edited))
    edited_copy(big, edited, (size_mib << 20) // 2)
    small = os.path.join(work, "small")
    os.makedirs(small)
    with open(big, "rb") as src:
        for i in range(2000):
            with open(os.path.join(small, f"f{i:04d}"), "wb") as f:
                f.write(src.read(256))
    return big, edited, small


class Tool:
    name = ""

    def __init__(self, work):
        self.repo = os.path.join(work, "repo-" + self.name)


class Chunkstore(Tool):
    name = "chunkstore"
    exe = ""

    def init(self):
        # Untimed, like `restic init` and `borg init`.
        subprocess.run([self.exe, "--store", self.repo, "-q", "init"], env=ENV, check=True, capture_output=True)

    def ingest(self, path):
        out = subprocess.run([self.exe, "--store", self.repo, "publish", path], env=ENV, check=True,
                             capture_output=True, text=True).stdout
        return out.split()[0]

    def timed_ingest(self, path):
        return run([self.exe, "--store", self.repo, "publish", path])

    def restore(self, target, path, ref):
        # Redirected like the other tools' plain file writes (`cat -o` would
        # also fsync the output before renaming it into place).
        return run(["sh", "-c", f'"{self.exe}" --store "{self.repo}" cat {ref} > "{target}/out.bin"'])


class Restic(Tool):
    name = "restic"

    def init(self):
        subprocess.run(["restic", "init", "--repo", self.repo], env=ENV, check=True, capture_output=True)

    def timed_ingest(self, path):
        return run(["restic", "backup", "--repo", self.repo, "--quiet", path])

    def restore(self, target, path, ref):
        return run(["restic", "restore", "latest", "--repo", self.repo, "--target", target])


class Borg(Tool):
    name = "borg"
    n = 0

    def init(self):
        subprocess.run(["borg", "init", "--encryption", "none", self.repo], env=ENV, check=True, capture_output=True)

    def timed_ingest(self, path):
        Borg.n += 1
        return run(["borg", "create", f"{self.repo}::a{Borg.n}", path], cwd=os.path.dirname(path))

    def restore(self, target, path, ref):
        return run(["borg", "extract", f"{self.repo}::a{Borg.n}"], cwd=target)


class Casync(Tool):
    name = "casync"
    n = 0

    def init(self):
        os.makedirs(self.repo)

    def timed_ingest(self, path):
        Casync.n += 1
        ext = "caidx" if os.path.isdir(path) else "caibx"
        self.index = os.path.join(self.repo, f"i{Casync.n}.{ext}")
        return run(["casync", "make", f"--store={self.repo}/store", self.index, path])

    def restore(self, target, path, ref):
        return run(["casync", "extract", f"--store={self.repo}/store", self.index, os.path.join(target, "out.bin")])


def write_measurement(prefix, out):
    """Writes out to docs/measurements/PREFIX-DATE.json (UTC date); returns
    the path."""
    date = datetime.datetime.utcnow().strftime("%Y-%m-%d")
    path = os.path.join(ROOT, "docs", "measurements", f"{prefix}-{date}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    return path


def tool_versions(chunkstore_exe):
    """What each tool says of its version (chunkstore: its first line)."""
    def out(cmd):
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    return {"chunkstore": out([chunkstore_exe, "--version"]).split("\n")[0],
            "restic": out(["restic", "version"]).strip(),
            "borg": out(["borg", "--version"]).strip(),
            "casync": out(["casync", "--version"]).split("\n")[0]}


def stats(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "samples": values}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunkstore", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--seed", default="chunkstore")
    args = ap.parse_args()
    Chunkstore.exe = os.path.abspath(args.chunkstore)
    work = tempfile.mkdtemp(prefix="chunkstore-peers-")
    try:
        big, edited, small = make_inputs(work, args.size_mib, args.seed)
        mib = args.size_mib
        yard = []
        kinds = [Chunkstore, Restic, Borg, Casync]
        results = {k.name: {"ingest": [], "reingest": [], "restore": [], "small_files": [], "edit_bytes": [],
                            "rss_kib": []} for k in kinds}
        for rnd in range(args.rounds):
            order = kinds[rnd % len(kinds):] + kinds[:rnd % len(kinds)]
            secs, _ = run(["openssl", "dgst", "-sha256", big])
            yard.append(mib / secs)
            for kind in order:
                round_dir = os.path.join(work, f"r{rnd}")
                os.makedirs(round_dir, exist_ok=True)
                tool = kind(round_dir)
                tool.init()
                secs, rss = tool.timed_ingest(big)
                results[tool.name]["ingest"].append(mib / secs)
                results[tool.name]["rss_kib"].append(rss)
                ref = tool.ingest(big) if tool.name == "chunkstore" else None
                before = du(tool.repo)
                secs, _ = tool.timed_ingest(edited)
                results[tool.name]["reingest"].append(mib / secs)
                results[tool.name]["edit_bytes"].append(du(tool.repo) - before)
                target = os.path.join(round_dir, "restore-" + tool.name)
                os.makedirs(target)
                if tool.name == "chunkstore":
                    ref = tool.ingest(edited)
                recycle_pages(round_dir, mib)
                secs, _ = tool.restore(target, edited, ref)
                results[tool.name]["restore"].append(mib / secs)
                shutil.rmtree(target)
                secs, _ = tool.timed_ingest(small)
                results[tool.name]["small_files"].append(2000 / secs)
                shutil.rmtree(tool.repo)
            shutil.rmtree(os.path.join(work, f"r{rnd}"))
        out = {
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
            "rounds": args.rounds,
            "size_mib": mib,
            "yardstick_mib_per_s": statistics.median(yard),
            "yardstick_samples": yard,
            "versions": tool_versions(Chunkstore.exe),
            "tools": {name: {k: stats(v) for k, v in r.items()} for name, r in results.items()},
            "notes": {
                "chunkstore": "no encryption; zstd (its default) only where it saves 1/16 (none here); fdatasync of packs and "
                              "SQLite FULL sync; chunking and hashing on 2 threads; restore = `cat REF > FILE` "
                              "(verifies every chunk; reserves the file's blocks before writing them; the output is not "
                              "fsynced, like the others')",
                "restic": "AES-256 encryption and MAC always on; repository v2 compression (zstd, auto); "
                          "parallel; restore = `restic restore latest`",
                "borg": "`--encryption none`, default lz4 compression; single-threaded; restore = `borg extract`",
                "casync": "no encryption; default zstd compression of chunks; single-threaded; restore = "
                          "`casync extract`",
                "timing": "wall clock of each whole process, including its start-up; repositories created "
                          "before the first timed ingest (init of each tool); inputs in the page cache; "
                          "MiB/s = input size / time; small files = 2,000 files of 256 bytes; every timed "
                          "command starts after a sync, every restore after an untimed file of its size was "
                          "written and deleted (the page cache then hands every tool just-freed pages)",
            },
        }
        print("compare_peers: wrote", write_measurement("peers", out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

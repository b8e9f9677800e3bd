#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`chunkstore mount` through the kernel: listings of names, slashes as
directory levels, a name that is also a directory, names that cannot be
paths; file bytes (whole, at random offsets, across a chunk boundary,
out of order, through mmap); a tree's modes, mtimes, symlinks, empty and nested
directories; .versions/NAME@N and .objects/sha256:<hex>; names published
while mounted (and a name's new version) seen within the refresh interval;
writes refused; a damaged chunk giving EIO for its bytes only, logged by
object; a crafted index (a tree's directory that is not a tree, a publish
time past what nanoseconds hold); --read-ahead set (as root) or left; an http:// store, whose first 4 KiB
read of a file is one ranged GET; unmounting with fusermount3 -u and with SIGTERM, each exiting 0;
and a missing or wrong mount point refused. Without /dev/fuse the test
fails: it is never skipped.
Usage: mount_test.py CHUNKSTORE"""
import errno
import hashlib
import json
import mmap
import os
import random
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time

EXE = os.path.abspath(sys.argv[1])
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL", what, flush=True)


def cs(store, *args, stdin=None):
    return subprocess.run([EXE, "--store", store] + list(args), input=stdin, capture_output=True, check=True).stdout


def sha(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def errno_of(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


class Mount:
    """chunkstore mount in the background, its stderr collected."""

    def __init__(self, store, mountpoint, *extra, before=()):
        self.mountpoint = mountpoint
        self.p = subprocess.Popen([EXE, "--store", store] + list(before) + ["mount", mountpoint] + list(extra),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()
        deadline = time.time() + 20
        while not os.path.ismount(mountpoint):
            if self.p.poll() is not None or time.time() > deadline:
                time.sleep(0.2)
                raise RuntimeError(f"the mount did not come up (exit {self.p.poll()}): {''.join(self.log)}")
            time.sleep(0.05)

    def _drain(self):
        for line in self.p.stderr:
            self.log.append(line.decode(errors="replace"))

    def unmount(self):
        """fusermount3 -u; returns the command's exit code."""
        r = subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True)
        check(r.returncode == 0, f"fusermount3 -u: {r.stderr!r}")
        return self.p.wait(timeout=20)

    def cleanup(self):
        """Whatever happened: no mount and no process left behind."""
        if os.path.ismount(self.mountpoint):
            subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait(timeout=20)
        if self.p.returncode != 0:
            print(f"mount exited {self.p.returncode}; its stderr:\n{''.join(self.log)}", flush=True)


def direct_reads(path, data, reads):
    """Reads (offset, size) of path in the order given with O_DIRECT;
    whether each gave data's bytes (a failed read fails the test)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        ok = True
        for off, n in reads:
            buf = mmap.mmap(-1, n)  # page-aligned, as O_DIRECT wants
            got = os.preadv(fd, [buf], off)
            if buf[:got] != data[off:off + n]:
                print(f"read of {n} at {off}: {got} bytes, not the object's", flush=True)
                ok = False
            buf.close()
        return ok
    finally:
        os.close(fd)


def bdi_file(mountpoint):
    """The sysfs file of the kernel's read-ahead for a mount."""
    dev = os.stat(mountpoint).st_dev
    return f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb"


def chunk_offsets(path):
    """Where the store's default chunking cuts a file (chunks, no store)."""
    out = subprocess.run([EXE, "chunks", path], capture_output=True, check=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()]


def damage(store, data):
    """Flips a byte of data inside its pack file; returns nothing, fails
    the test if the bytes are not found."""
    packs = [os.path.join(store, "packs", p) for p in os.listdir(os.path.join(store, "packs"))]
    for pack in packs:
        blob = read(pack)
        at = blob.find(data)
        if at >= 0:
            with open(pack, "r+b") as f:
                f.seek(at + 10)
                f.write(bytes([blob[at + 10] ^ 0x5A]))
            return True
    return False


def main():
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError as e:
        sys.exit(f"mount_test: FAIL: cannot open /dev/fuse ({e}); this test needs FUSE and is never skipped")
    work = tempfile.mkdtemp(prefix="chunkstore-mount-")
    store = os.path.join(work, "store")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    rng = random.Random(7)
    # No compression: the damage test finds a chunk's bytes in its pack.
    cs(store, "-q", "init", "--no-compression")

    def publish(name, data):
        path = os.path.join(work, "in-" + hashlib.sha1(name.encode()).hexdigest())
        with open(path, "wb") as f:
            f.write(data)
        cs(store, "-q", "publish", "--name", name, path)
        return path

    big = rng.randbytes(6 << 20)
    big_path = publish("models/big", big)
    small = b"hello, mount\n"
    publish("notes/hello", small)
    publish("doc/readme", b"version one\n")
    publish("doc/readme", b"version two, a little longer\n")
    publish("clash", b"a name that is also a directory\n")
    publish("clash/inner", b"inside\n")
    publish("odd//name", b"never a path\n")
    publish("dots/../escape", b"never a path\n")
    publish("clash@1/x", b"would stand where clash's first version is\n")
    victim = rng.randbytes(3 << 20)
    victim_path = publish("damage/victim", victim)
    other = rng.randbytes(2 << 20)
    publish("damage/other", other)
    tree = os.path.join(work, "tree")
    os.makedirs(os.path.join(tree, "nested/deeper"))
    os.makedirs(os.path.join(tree, "empty"))
    files = {"run.sh": (b"#!/bin/sh\necho hi\n", 0o755), "secret": (b"only mine\n", 0o600),
             "nested/deeper/deep.txt": (b"deep down\n", 0o644)}
    mtimes = {}
    for i, (rel, (data, mode)) in enumerate(sorted(files.items())):
        p = os.path.join(tree, rel)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, mode)
        mtimes[rel] = 1700000000_123456789 + i * 1000_000_001
        os.utime(p, ns=(mtimes[rel], mtimes[rel]))
    os.symlink("run.sh", os.path.join(tree, "link"))
    tree_out = json.loads(cs(store, "--json", "publish", tree, "--name", "site"))
    tree_id = tree_out["published"][0]["id"]

    # A read-ahead of 4 MiB where it can be set: reads up to 32 MiB ahead
    # of an open file's in-order read count as in order (the damage test
    # below needs a chunk's length).
    m = Mount(store, mnt, "--refresh", "1", "--read-ahead", "4096")
    try:
        check(sorted(os.listdir(mnt)) == [".objects", ".versions", "clash", "damage", "doc", "models", "notes", "site"],
              f"root listing: {sorted(os.listdir(mnt))}")
        check(os.listdir(os.path.join(mnt, "models")) == ["big"], "a name with a slash is a directory level")
        st = os.stat(os.path.join(mnt, "models"))
        check(stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555 and abs(st.st_mtime - time.time()) < 600,
              f"a name directory is 0555 with the mount's time: {oct(st.st_mode)} {st.st_mtime}")
        check(not os.path.exists(os.path.join(mnt, "dots")) and not os.path.exists(os.path.join(mnt, "odd")),
              "names with empty or '..' components are not paths")
        log = "".join(m.log)
        check("odd//name" in log and "dots/../escape" in log and "clash@1/x" in log,
              f"skipped names are noted on stderr: {log!r}")
        check(not os.path.exists(os.path.join(mnt, "clash@1")), "a directory level spelled like a version is not shown")
        # A name that is a prefix of others: the directory wins.
        check(os.path.isdir(os.path.join(mnt, "clash")) and read(os.path.join(mnt, "clash/inner")) == b"inside\n",
              "a name that is also a prefix is a directory")
        check(read(os.path.join(mnt, ".versions/clash@1")) == b"a name that is also a directory\n",
              "its own object is under .versions")

        # Plain objects: read-only files, whole bytes.
        st = os.stat(os.path.join(mnt, "models/big"))
        check(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o444 and st.st_size == len(big),
              f"a name is a 0444 file of its size: {oct(st.st_mode)} {st.st_size}")
        check(abs(st.st_mtime - time.time()) < 600, "its mtime is when it was published")
        check(read(os.path.join(mnt, "models/big")) == big, "whole file bytes")
        check(read(os.path.join(mnt, "notes/hello")) == small, "a small object")
        fd = os.open(os.path.join(mnt, "models/big"), os.O_RDONLY)
        try:
            bad = []
            for _ in range(200):
                off = rng.randrange(len(big))
                n = rng.randrange(1, 200000)
                if os.pread(fd, n, off) != big[off:off + n]:
                    bad.append((off, n))
            check(not bad, f"random-offset reads: {bad[:5]}")
            cuts = chunk_offsets(big_path)
            check(len(cuts) >= 3, f"the big object has several chunks: {cuts}")
            for cut in cuts[1:]:
                check(os.pread(fd, 10000, cut - 5000) == big[cut - 5000:cut + 5000], f"a read across the cut at {cut}")
            check(os.pread(fd, 100, len(big) + 10) == b"", "a read past the end is empty")
            # Threads sharing the descriptor: reads of one handle at once,
            # sequential runs and random ones interleaved.
            errors = []

            def reader(seed):
                local = random.Random(seed)
                pos = local.randrange(len(big))
                for _ in range(60):
                    if local.random() < 0.5:
                        pos = local.randrange(len(big))
                    n = local.randrange(1, 300000)
                    if os.pread(fd, n, pos) != big[pos:pos + n]:
                        errors.append((seed, pos, n))
                    pos = min(len(big) - 1, pos + n)

            threads = [threading.Thread(target=reader, args=(s,)) for s in range(6)]
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            check(not errors, f"concurrent reads of one descriptor: {errors[:3]}")
            # Reads arriving out of order, as the kernel's read-ahead sends
            # them (O_DIRECT: each read reaches the mount as it is made).
            # One ahead of the cursor moves it there; the reads it overtook
            # get the bytes it passed, and the rest still reads in order.
            check(direct_reads(os.path.join(mnt, "models/big"), big, [
                (0, 256 << 10), (1 << 20, 256 << 10), (512 << 10, 256 << 10), (256 << 10, 256 << 10),
                (768 << 10, 256 << 10), (1280 << 10, 1 << 20), (2304 << 10, (6 << 20) - (2304 << 10)),
                (3 << 20, 4096)]), "reads out of order")
            # In order from the middle: the third read in a row that goes on
            # from the one before moves the in-order read there; then one
            # overtaking another, on to the end, and again from further back.
            mid = (2 << 20) + 4096
            check(direct_reads(os.path.join(mnt, "models/big"), big, [
                (mid, 128 << 10), (mid + (128 << 10), 128 << 10), (mid + (256 << 10), 256 << 10),
                (mid + (768 << 10), 256 << 10), (mid + (512 << 10), 256 << 10),
                (mid + (1 << 20), (6 << 20) - mid - (1 << 20)), (mid - 4096, 4096),
                (1 << 20, 128 << 10), ((1 << 20) + (128 << 10), 128 << 10), ((1 << 20) + (256 << 10), 256 << 10)]),
                  "reads in order from the middle, then again from further back")
            with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mm:
                check(mm[:4096] == big[:4096] and mm[len(big) - 4096:] == big[-4096:] and mm[3000000:3100000] ==
                      big[3000000:3100000], "mmap gives the same bytes")
        finally:
            os.close(fd)

        # A tree: modes, mtimes, symlinks, empty and nested directories.
        site = os.path.join(mnt, "site")
        check(sorted(os.listdir(site)) == ["empty", "link", "nested", "run.sh", "secret"], f"tree: {os.listdir(site)}")
        for rel, (data, mode) in files.items():
            p = os.path.join(site, rel)
            st = os.stat(p)
            check(stat.S_IMODE(st.st_mode) == mode, f"{rel} mode {oct(st.st_mode)}")
            check(st.st_mtime_ns == mtimes[rel], f"{rel} mtime {st.st_mtime_ns} != {mtimes[rel]}")
            check(st.st_size == len(data) and read(p) == data, f"{rel} bytes")
        check(os.path.islink(os.path.join(site, "link")) and os.readlink(os.path.join(site, "link")) == "run.sh",
              "a symlink is a symlink")
        check(os.path.isdir(os.path.join(site, "empty")) and os.listdir(os.path.join(site, "empty")) == [],
              "an empty directory")
        check(os.listdir(os.path.join(site, "nested")) == ["deeper"], "a nested directory")
        check(errno_of(lambda: os.stat(os.path.join(site, "missing"))) == errno.ENOENT, "a missing entry: ENOENT")

        # Versions and objects.
        check(sorted(os.listdir(os.path.join(mnt, ".versions/doc"))) == ["readme@1", "readme@2"], "versions listed")
        check(read(os.path.join(mnt, ".versions/doc/readme@1")) == b"version one\n", "version 1")
        check(read(os.path.join(mnt, ".versions/doc/readme@2")) == b"version two, a little longer\n", "version 2")
        check(not os.path.exists(os.path.join(mnt, ".versions/doc/readme@3")), "no version 3")
        check(not os.path.exists(os.path.join(mnt, ".versions/doc/readme@x")), "a malformed version")
        check(not os.path.exists(os.path.join(mnt, ".versions/doc/readme@01")), "one path per version (no leading 0)")
        check({"clash", "clash@1"} <= set(os.listdir(os.path.join(mnt, ".versions"))),
              "in .versions a name and a directory of the same name do not clash")
        check(read(os.path.join(mnt, "doc/readme")) == b"version two, a little longer\n", "the name is its latest")
        check(read(os.path.join(mnt, ".objects", sha(small))) == small, ".objects by id")
        check(read(os.path.join(mnt, ".objects", sha(big)))[:1 << 20] == big[:1 << 20], ".objects, a big one")
        check(sorted(os.listdir(os.path.join(mnt, ".objects", tree_id))) == sorted(os.listdir(site)),
              "a tree under .objects is a directory")
        check(not os.path.exists(os.path.join(mnt, ".objects", "sha256:" + "0" * 64)), "an unknown id")
        check(not os.path.exists(os.path.join(mnt, ".objects", "sha256:1234")), "a malformed id")
        check(not os.path.exists(os.path.join(mnt, ".objects", sha(small).upper())), "ids are lower case")

        # Writes are refused.
        for what, fn in [("write a file", lambda: open(os.path.join(mnt, "notes/hello"), "wb")),
                         ("append", lambda: open(os.path.join(mnt, "models/big"), "ab")),
                         ("create a file", lambda: open(os.path.join(mnt, "notes/new"), "wb")),
                         ("mkdir", lambda: os.mkdir(os.path.join(mnt, "newdir"))),
                         ("unlink", lambda: os.unlink(os.path.join(mnt, "notes/hello"))),
                         ("chmod", lambda: os.chmod(os.path.join(site, "run.sh"), 0o777)),
                         ("rename", lambda: os.rename(os.path.join(mnt, "notes/hello"), os.path.join(mnt, "x")))]:
            e = errno_of(fn)
            check(e in (errno.EROFS, errno.EACCES, errno.EPERM), f"{what}: errno {e}")

        # Published while mounted: a new name and a new version.
        cs(store, "-q", "publish", "--name", "notes/later", "-", stdin=b"published while mounted\n")
        cs(store, "-q", "publish", "--name", "doc/readme", "-", stdin=b"version three\n")
        deadline = time.time() + 1 + 5
        seen = False
        while time.time() < deadline and not seen:
            seen = "later" in os.listdir(os.path.join(mnt, "notes")) and \
                read(os.path.join(mnt, "doc/readme")) == b"version three\n"
            time.sleep(0.2)
        check(seen, "a new name and a new version show within the refresh interval")
        check(read(os.path.join(mnt, "notes/later")) == b"published while mounted\n", "the new name's bytes")

        # Damage: EIO for the damaged bytes only, logged by object.
        cuts = chunk_offsets(victim_path)
        check(len(cuts) >= 2, "the victim has several chunks")
        target = cuts[1] + 4096
        check(damage(store, victim[target:target + 64]), "the victim's bytes are in a pack")
        fd = os.open(os.path.join(mnt, "damage/victim"), os.O_RDONLY)
        try:
            check(errno_of(lambda: os.pread(fd, 4096, target)) == errno.EIO, "a damaged chunk reads as EIO")
            check(errno_of(lambda: os.pread(fd, 4096, target)) == errno.EIO, "and again")
            check(os.pread(fd, 4096, 0) == victim[:4096], "the object's intact chunk still reads")
            # Beyond the damage, in a new handle read in order up to the
            # damaged chunk, whose in-order read would have to pass it.
            check(len(cuts) >= 3, f"the victim has a chunk after the damaged one: {cuts}")
            if os.access(bdi_file(mnt), os.W_OK):  # the read-ahead is 4 MiB: the gap counts as in order
                check(cuts[2] - cuts[1] + 100 <= 32 << 20, "the gap is within the in-order distance")
            try:
                ok, err = direct_reads(os.path.join(mnt, "damage/victim"), victim,
                                       [(0, cuts[1]), (cuts[2] + 100, 4096)]), 0
            except OSError as e:
                ok, err = False, e.errno
            check(ok, f"an intact chunk beyond a damaged one still reads (errno {err})")
        finally:
            os.close(fd)
        check(read(os.path.join(mnt, "damage/other")) == other, "other files still read")
        time.sleep(0.2)
        check(any(sha(victim) in line for line in m.log), f"the log names the damaged object: {''.join(m.log)!r}")
        check(m.unmount() == 0, f"exit 0 after fusermount3 -u: {''.join(m.log)!r}")
        check(not os.path.ismount(mnt), "unmounted")
    finally:
        m.cleanup()

    # SIGTERM unmounts and exits 0.
    m = Mount(store, mnt, "--refresh", "1")
    try:
        check(read(os.path.join(mnt, "notes/hello")) == small, "second mount reads")
        m.p.send_signal(signal.SIGTERM)
        check(m.p.wait(timeout=20) == 0, f"exit 0 after SIGTERM: {''.join(m.log)!r}")
        check(not os.path.ismount(mnt), "SIGTERM unmounted")
    finally:
        m.cleanup()

    # The kernel's read-ahead for the mount: raised to --read-ahead as
    # root, left alone with 0 (and by anyone else).
    for extra, settable in ((["--read-ahead", "2048"], True), (["--read-ahead", "0"], False)):
        m = Mount(store, mnt, *extra)
        try:
            with open(bdi_file(mnt)) as f:
                kib = int(f.read())
            if settable and os.access(bdi_file(mnt), os.W_OK):
                check(kib == 2048, f"{extra}: the mount's read-ahead is {kib} KiB")
            else:
                check(kib < 2048, f"{extra}: the mount's read-ahead is the kernel's: {kib} KiB")
            check(read(os.path.join(mnt, "models/big")) == big, f"{extra}: whole file bytes")
            if extra[1] == "0":
                # The kernel's read-ahead: 1 MiB counts as in order. Reads
                # in order from well behind where an earlier run stopped
                # move the in-order read back there.
                check(direct_reads(os.path.join(mnt, "models/big"), big, [
                    (0, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 1 << 20), (3 << 20, 1 << 20),
                    (100 << 10, 128 << 10), (228 << 10, 128 << 10), (356 << 10, 256 << 10), (612 << 10, 1 << 20)]),
                      "reads in order from the start, then again in order from well behind where they stopped")
            check(m.unmount() == 0, f"{extra}: exit 0 after fusermount3 -u")
        finally:
            m.cleanup()

    # An http:// store (a served store: a bucket store to its clients), with
    # no chunk cache: the first 4 KiB of a large file is one ranged GET
    # of one chunk; reading on gets the whole file, each chunk once.
    srv = subprocess.Popen([EXE, "--store", store, "--json", "serve", "--listen", "127.0.0.1:0"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    served = []
    try:
        url = json.loads(srv.stdout.readline().decode())["url"]
        threading.Thread(target=lambda: [served.append(line.decode(errors="replace")) for line in srv.stderr],
                         daemon=True).start()

        def pack_gets():
            time.sleep(0.3)  # access lines are written within 100 ms
            return [line for line in served if '"GET /blobs/packs/' in line]

        # No disk cache: reads in order then check each chunk with the
        # next one's first bytes, the dearer case.
        m = Mount(url, mnt, before=["--cache-dir", os.path.join(work, "http-cache"), "--cache-size", "0"])
        try:
            path = os.path.join(mnt, "models/big")
            check(os.stat(path).st_size == len(big), "over http: the file's size")
            before = len(pack_gets())
            fd = os.open(path, os.O_RDONLY)
            try:
                check(os.pread(fd, 4096, 0) == big[:4096], "over http: the first 4 KiB")
            finally:
                os.close(fd)
            first = pack_gets()[before:]
            check(len(first) == 1, f"over http: the first 4 KiB, cold, is one ranged GET: {first}")
            check(read(path) == big, "over http: the whole file")
            cuts = chunk_offsets(big_path)
            gets = pack_gets()[before:]
            check(len(gets) <= len(cuts) + 1, f"over http: each chunk fetched once ({len(cuts)} chunks): {len(gets)} GETs")
            check(m.unmount() == 0, f"over http: exit 0 after fusermount3 -u: {''.join(m.log)!r}")
        finally:
            m.cleanup()
    finally:
        srv.terminate()
        srv.wait(timeout=20)

    # A crafted index: a tree's directory is not a tree there, and a
    # publish time no clock gives.
    nested_id = json.loads(cs(store, "--json", "stat", "site:nested"))["id"]
    db = sqlite3.connect(os.path.join(store, "index.db"))
    with db:
        db.execute("DELETE FROM trees WHERE id = ?", (bytes.fromhex(nested_id[7:]),))
        db.execute("UPDATE names SET created = 9223372036854775807 WHERE name = 'notes/hello'")
    db.close()
    m = Mount(store, mnt, "--refresh", "1")
    try:
        check(errno_of(lambda: os.stat(os.path.join(mnt, "site/nested"))) == errno.EIO,
              "a directory entry naming an object that is not a tree: EIO")
        check(errno_of(lambda: os.listdir(os.path.join(mnt, "site/nested"))) == errno.EIO, "and listing it: EIO")
        check(read(os.path.join(mnt, "site/run.sh")) == files["run.sh"][0], "the tree's other entries still read")
        st = os.stat(os.path.join(mnt, "notes/hello"))
        check(st.st_mtime > 4e9, f"a publish time past what nanoseconds hold shows as the latest time: {st.st_mtime}")
        time.sleep(0.2)
        check(any("is a directory" in line and nested_id in line for line in m.log),
              f"the log says which tree entry is damaged: {''.join(m.log)!r}")
        check(m.unmount() == 0, f"exit 0 after fusermount3 -u: {''.join(m.log)!r}")
    finally:
        m.cleanup()

    # Bad mount points: one line, the project's exit codes.
    r = subprocess.run([EXE, "--store", store, "mount", os.path.join(work, "nowhere")], capture_output=True, timeout=30)
    check(r.returncode == 3 and r.stderr.count(b"\n") == 1 and b"nowhere" in r.stderr,
          f"a missing mount point: exit {r.returncode}, {r.stderr!r}")
    r = subprocess.run([EXE, "--store", store, "mount", big_path], capture_output=True, timeout=30)
    check(r.returncode == 2 and b"not a directory" in r.stderr, f"a file as mount point: {r.returncode} {r.stderr!r}")
    r = subprocess.run([EXE, "--store", store, "mount", mnt, "--refresh", "0"], capture_output=True, timeout=30)
    check(r.returncode == 2 and not os.path.ismount(mnt), f"--refresh 0: {r.returncode} {r.stderr!r}")
    r = subprocess.run([EXE, "--store", store, "mount", mnt, "--read-ahead", "65537"], capture_output=True, timeout=30)
    check(r.returncode == 2 and not os.path.ismount(mnt), f"--read-ahead 65537: {r.returncode} {r.stderr!r}")
    r = subprocess.run([EXE, "--store", os.path.join(work, "no-store"), "mount", mnt], capture_output=True, timeout=30)
    check(r.returncode == 3 and not os.path.ismount(mnt), f"a missing store: {r.returncode} {r.stderr!r}")

    shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        sys.exit(f"mount_test: {len(FAILURES)} checks failed")
    print("mount_test: all checks passed")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the chunkstore command on every bad input the reliability issue
lists and records what a user gets: exit code and the stderr line. Also
checks that nothing stored was lost. Writes JSON (see reliability_report.py).

Usage: bad_input.py CHUNKSTORE_BINARY OUT.json"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def main(exe, out_path):
    work = tempfile.mkdtemp(prefix="chunkstore-bad-input-")
    store = os.path.join(work, "store")
    cases = []

    def shown(arg):
        # As a shell would need it, with control characters visible.
        if arg == "":
            return "''"
        return "".join(c if " " <= c != "\x7f" else "\\x%02x" % ord(c) if c != "\n" else "\\n" for c in arg)

    def run(label, args, stdin=None, expect=None):
        p = subprocess.run([exe, "--store", store] + args, input=stdin, capture_output=True, timeout=60)
        err = p.stderr.decode(errors="replace").strip().splitlines()
        cases.append({"input": label, "command": "chunkstore " + " ".join(shown(a).replace(work, "$W") for a in args),
                      "exit": p.returncode, "message": (err[0] if err else "").replace(work, "$W"),
                      "expected_exit": expect, "ok": expect is None or p.returncode == expect})
        return p

    def write(name, data):
        path = os.path.join(work, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    keep = write("keep.bin", os.urandom(300000))
    keep_id = run("a good file (control)", ["publish", "--name", "keep", keep], expect=0).stdout.split()[0].decode()
    run("missing file", ["publish", os.path.join(work, "missing")], expect=1)
    run("an empty directory (an empty tree)", ["publish", tempfile.mkdtemp(dir=work)], expect=0)
    run("special file", ["publish", "/dev/null"], expect=1)
    fifo = os.path.join(work, "fifo")
    os.mkfifo(fifo)
    run("named pipe nobody writes to", ["publish", fifo], expect=1)
    run("empty file", ["publish", write("empty", b"")], expect=0)
    run("stdin closed at once", ["publish", "-"], stdin=b"", expect=0)
    run("name with a control character", ["publish", "--name", "bad\x01name", keep], expect=2)
    run("name of 2 KiB", ["publish", "--name", "n" * 2048, keep], expect=2)
    run("name with @ (allowed)", ["publish", "--name", "a@5", keep], expect=0)
    run("that name as a ref: version 5 of a", ["cat", "a@5"], expect=3)
    run("that name, written NAME@latest", ["cat", "a@5@latest"], expect=0)
    run("malformed ref", ["cat", "sha256:xyz"], expect=2)
    run("ref with a version that is not one (a name)", ["cat", "keep@x"], expect=3)
    run("path inside something not a tree", ["cat", "keep:../etc/passwd"], expect=3)
    tree_dir = tempfile.mkdtemp(dir=work)
    write(os.path.join(os.path.basename(tree_dir), "f"), b"f")
    run("(setup) a tree", ["publish", "--name", "t", tree_dir], expect=0)
    run("path with .. inside a tree", ["cat", "t:../f"], expect=2)
    run("restore into the store itself", ["restore", "t", os.path.join(store, "packs", "x")], expect=2)
    run("unknown ref", ["cat", "nothing-here"], expect=3)
    write("a", b"69235")
    write("b", b"95303")
    run("(setup) two objects sharing an id prefix",
        ["publish", os.path.join(work, "a"), os.path.join(work, "b")], expect=0)
    run("ambiguous id prefix", ["cat", "c11eb5e6"], expect=2)
    run("negative range", ["cat", "keep", "--offset", "-5"], expect=2)
    run("overflowing range", ["cat", "keep", "--offset", "99999999999999999999"], expect=2)
    run("range past the end", ["cat", "keep", "--offset", "400000"], expect=0)
    run("chunk parameters out of range", ["init", "--min", "10"], expect=2)
    run("unknown compression", ["init", "--compression", "lz4"], expect=2)
    run("compression level out of range", ["init", "--compression", "zstd:25"], expect=2)
    run("chunk parameters out of order", ["chunks", "--min", "8192", "--avg", "4096", keep], expect=2)
    plain = os.path.join(work, "plain")
    os.makedirs(plain)
    write("plain/file.txt", b"x")
    p = subprocess.run([exe, "--store", plain, "publish", keep], capture_output=True)
    cases.append({"input": "a store directory that is not a store", "command": "chunkstore --store $W/plain publish ...",
                  "exit": p.returncode, "message": p.stderr.decode().strip().replace(work, "$W"),
                  "expected_exit": 1, "ok": p.returncode == 1 and os.listdir(plain) == ["file.txt"]})
    newer = os.path.join(work, "newer")
    subprocess.run([exe, "--store", newer, "init"], capture_output=True, check=True)
    with sqlite3.connect(os.path.join(newer, "index.db")) as db:
        db.execute("UPDATE meta SET value='9' WHERE key='schema_version'")
    p = subprocess.run([exe, "--store", newer, "ls"], capture_output=True)
    cases.append({"input": "a store of a newer format", "command": "chunkstore --store $W/newer ls",
                  "exit": p.returncode, "message": p.stderr.decode().strip().replace(work, "$W"),
                  "expected_exit": 1, "ok": p.returncode == 1})
    # A pack file deleted under the store: reads and verify say so (4).
    victim = os.path.join(work, "victim")
    subprocess.run([exe, "--store", victim, "publish", "--name", "v", keep], capture_output=True, check=True)
    for f in os.listdir(os.path.join(victim, "packs")):
        os.remove(os.path.join(victim, "packs", f))
    for args, label in [(["cat", "v"], "a pack file deleted under the store (cat)"),
                        (["verify"], "a pack file deleted under the store (verify)")]:
        p = subprocess.run([exe, "--store", victim] + args, capture_output=True)
        lines = (p.stderr or p.stdout).decode().strip().splitlines()
        cases.append({"input": label, "command": "chunkstore " + " ".join(args), "exit": p.returncode,
                      "message": (lines[0] if lines else "").replace(work, "$W"), "expected_exit": 4,
                      "ok": p.returncode == 4})
    # Empty values and meaningless combinations are usage errors.
    p = subprocess.run([exe, "--store", "", "ls"], capture_output=True)
    cases.append({"input": "an empty --store", "command": "chunkstore --store '' ls", "exit": p.returncode,
                  "message": p.stderr.decode().strip().splitlines()[0], "expected_exit": 2, "ok": p.returncode == 2})
    run("an empty --name", ["publish", "--name", "", keep], expect=2)
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    write("tree/file", b"in the tree")
    os.symlink(keep, os.path.join(tree, "link-out-of-the-tree"))
    os.mkfifo(os.path.join(tree, "fifo"))
    run("--name with a directory (names its tree)", ["publish", "--name", "t", tree], expect=0)
    run("--name and --name-prefix together", ["publish", "--name", "t", "--name-prefix", "p", tree], expect=2)
    p = run("a tree holding a symlink out of it and a FIFO", ["--json", "publish", "--name-prefix", "tree", tree],
            expect=0)
    published = [e["input"] for e in json.loads(p.stdout)["published"]] if p.returncode == 0 else []
    cases[-1]["ok"] = cases[-1]["ok"] and published == [os.path.join(tree, "file")]
    run("rm of a known and an unknown name", ["rm", "keep", "no-such-name"], expect=3)
    cases[-1]["ok"] = cases[-1]["ok"] and run("(check) the known name is still there", ["log", "keep"],
                                              expect=0).returncode == 0
    with open(os.path.join(store, "index.db"), "rb") as f:
        index_before = f.read()
    run("cat -o into the store directory", ["cat", "keep", "-o", os.path.join(store, "index.db")], expect=2)
    with open(os.path.join(store, "index.db"), "rb") as f:
        cases[-1]["ok"] = cases[-1]["ok"] and f.read() == index_before
    os.makedirs(os.path.join(work, "adir"))
    d = os.open(os.path.join(work, "adir"), os.O_RDONLY | os.O_DIRECTORY)
    p = subprocess.run([exe, "--store", store, "publish", "--name", "from-a-dir", "-"], stdin=d,
                       capture_output=True)
    os.close(d)
    cases.append({"input": "stdin that is a directory (a read error)", "command": "chunkstore publish - < DIR",
                  "exit": p.returncode, "message": p.stderr.decode().strip(), "expected_exit": 1,
                  "ok": p.returncode == 1})
    with open("/dev/full", "wb") as full:
        p = subprocess.run([exe, "--store", store, "ls"], stdout=full, stderr=subprocess.PIPE)
    cases.append({"input": "stdout on a full disk", "command": "chunkstore ls > /dev/full", "exit": p.returncode,
                  "message": p.stderr.decode().strip(), "expected_exit": 1, "ok": p.returncode == 1})
    p = run("a file name with a newline and an escape sequence", ["publish", os.path.join(work, "no\nsuch\x1b[2J")],
            expect=1)
    cases[-1]["ok"] = cases[-1]["ok"] and b"\x1b" not in p.stderr and p.stderr.count(b"\n") == 1
    # A store this user cannot write: read as it is, changes refused. Root
    # writes anything, so as root the commands run as nobody.
    ro = os.path.join(work, "ro")
    subprocess.run([exe, "--store", ro, "publish", "--name", "k", keep], capture_output=True, check=True)
    as_user = []
    if os.geteuid() == 0 and shutil.which("setpriv"):
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        ro_exe = os.path.join(work, "chunkstore")
        shutil.copy(exe, ro_exe)
        os.chmod(work, 0o755)
        for root, dirs, files in os.walk(ro):
            os.chmod(root, 0o755)
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
    else:
        ro_exe = exe
        for root, dirs, files in os.walk(ro):
            os.chmod(root, 0o555)
            for f in files:
                os.chmod(os.path.join(root, f), 0o444)
    for args, label, expect in [(["cat", "k"], "a store this user cannot write (cat)", 0),
                                (["verify"], "a store this user cannot write (verify)", 0),
                                (["tag", "k", "k2"], "a store this user cannot write (tag)", 1)]:
        p = subprocess.run(as_user + [ro_exe, "--store", ro] + args, capture_output=True)
        lines = p.stderr.decode().strip().splitlines()
        cases.append({"input": label, "command": "chunkstore " + " ".join(args), "exit": p.returncode,
                      "message": (lines[0] if lines else "").replace(work, "$W"), "expected_exit": expect,
                      "ok": p.returncode == expect})
    for root, dirs, files in os.walk(ro):
        os.chmod(root, 0o755)
    if os.geteuid() == 0:
        cases.append({"input": "an unreadable file",
                      "command": "(not run)", "exit": None,
                      "message": "not testable as root, who bypasses file permissions; the error paths are "
                                 "the same IOError ones the fault tests exercise",
                      "expected_exit": None, "ok": True})
    else:
        secret = write("secret", b"x")
        os.chmod(secret, 0)
        run("unreadable file", ["publish", secret], expect=1)
    full_disk(exe, work, keep, cases)
    # Nothing stored was lost along the way.
    p = subprocess.run([exe, "--store", store, "cat", keep_id], capture_output=True)
    with open(keep, "rb") as f:
        intact = p.returncode == 0 and p.stdout == f.read()
    v = subprocess.run([exe, "--store", store, "verify"], capture_output=True)
    result = {"cases": cases, "earlier_object_intact": intact, "verify_exit": v.returncode}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    shutil.rmtree(work)
    bad = [c for c in cases if not c["ok"]]
    for c in bad:
        print("bad_input: unexpected result for", c["input"], c)
    print(f"bad_input: {len(cases)} cases, {len(bad)} unexpected; earlier object intact: {intact}")
    return 0 if not bad and intact and v.returncode == 0 else 1


def full_disk(exe, work, keep, cases):
    """A store on a 4 MiB tmpfs filled to the last block: reads work, changes
    fail saying the disk is full, gc leaves no partial pack and compacts
    once there is room. Needs root (to mount); elsewhere the unit tests
    FullDisk.* and GcTest.*Room*/*FillsTheDisk* cover the same paths."""
    mnt = os.path.join(work, "full")
    os.mkdir(mnt)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt],
                                           capture_output=True).returncode != 0:
        cases.append({"input": "a full disk", "command": "(not run: mounting a small file system needs root)",
                      "exit": None, "message": "see the unit tests FullDisk.*", "expected_exit": None, "ok": True})
        return
    try:
        st = os.path.join(mnt, "st")
        with open(keep, "rb") as f:
            kept = f.read()

        def on(label, args, expect, check=None):
            p = subprocess.run([exe, "--store", st] + args, capture_output=True, timeout=60)
            lines = [l for l in p.stderr.decode(errors="replace").strip().splitlines() if "note:" not in l]
            notes = [l for l in p.stderr.decode(errors="replace").strip().splitlines() if "note:" in l]
            ok = p.returncode == expect and (check is None or check(p))
            if not ok:
                print("bad_input: full disk:", label, p.returncode, p.stdout[:300], p.stderr.decode(errors="replace"))
            cases.append({"input": label, "command": "chunkstore " + " ".join(a.replace(work, "$W") for a in args),
                          "exit": p.returncode, "message": ((lines or notes or [""])[0]).replace(work, "$W"),
                          "expected_exit": expect, "ok": ok})
            return p

        subprocess.run([exe, "--store", st, "publish", "--name", "k", keep], capture_output=True, check=True)
        dead = os.path.join(work, "dead.bin")
        with open(dead, "wb") as f:
            f.write(os.urandom(1200000))
        subprocess.run([exe, "--store", st, "publish", "--name", "d", dead], capture_output=True, check=True)
        subprocess.run([exe, "--store", st, "rm", "d"], capture_output=True, check=True)
        for f in os.listdir(st):
            if f.endswith("-shm"):
                os.remove(os.path.join(st, f))  # as after a reboot: SQLite must make it again
        packs = sorted(os.listdir(os.path.join(st, "packs")))
        fill = os.path.join(mnt, "fill")
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        subprocess.run(["fallocate", "-l", str(max(free - (1 << 20), 4096)), fill], check=True)
        while os.statvfs(mnt).f_bavail > 0:  # the last MiB, a block a file
            with open(fill + "%06d" % os.statvfs(mnt).f_bavail, "wb") as f:
                f.write(b"x" * 4096)
        on("a full disk (ls)", ["ls"], 0)
        on("a full disk (cat)", ["cat", "k"], 0, lambda p: p.stdout == kept)
        on("a full disk (verify)", ["verify"], 0)
        on("a full disk (stats)", ["stats"], 0)
        fresh = os.path.join(work, "fresh.bin")
        with open(fresh, "wb") as f:
            f.write(os.urandom(600000))
        packs_now = lambda: sorted(os.listdir(os.path.join(st, "packs")))
        on("a full disk (publish)", ["publish", "--name", "new", fresh], 1,
           lambda p: b"disk is full" in p.stderr and packs_now() == packs)
        on("a full disk (tag)", ["tag", "k", "k2"], 1, lambda p: b"nothing was changed" in p.stderr)
        on("a full disk (gc: no room even to record its work)", ["gc"], 1,
           lambda p: b"free a few MiB" in p.stderr and packs_now() == packs)
        fills = sorted(f for f in os.listdir(mnt) if f.startswith("fill") and f != "fill")
        for f in fills[:64]:  # 256 KiB back: room for gc's records, not for a copy
            os.remove(os.path.join(mnt, f))
        on("a nearly full disk (gc: no room to compact)", ["gc"], 0,
           lambda p: b"too full" in p.stderr and packs_now() == packs)
        for f in os.listdir(mnt):
            if f.startswith("fill"):
                os.remove(os.path.join(mnt, f))
        on("the disk has room again (gc compacts)", ["--json", "gc"], 0,
           lambda p: json.loads(p.stdout)["packs_compacted"] == 1)
        on("the disk has room again (cat)", ["cat", "k"], 0, lambda p: p.stdout == kept)
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

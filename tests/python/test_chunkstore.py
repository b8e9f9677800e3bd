# SPDX-License-Identifier: Apache-2.0
# The Python package against a real store: every way in (path, bytes,
# buffer, file object, directory), reads through the file object (whole,
# ranges across chunk boundaries, readinto into numpy), the catalog calls,
# threads reading at once, and every failure as its exception class: bad
# refs, unknown names, a closed store, a file object that fails, and a
# damaged pack, which must raise Corruption naming object and chunk and
# never return a wrong byte.
import hashlib
import io
import os
import random
import threading

import numpy as np
import pytest

import chunkstore


def payload(n, seed):
    return random.Random(seed).randbytes(n)


def sid(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def store(tmp_path):
    with chunkstore.Store.open(tmp_path / "store", create=True) as s:
        yield s


def test_open_missing_store_is_not_found(tmp_path):
    with pytest.raises(chunkstore.NotFound) as e:
        chunkstore.Store.open(tmp_path / "nothing")
    assert e.value.exit_code == 3
    assert isinstance(e.value, LookupError)
    assert not (tmp_path / "nothing").exists()


def test_publish_bytes_gives_the_sha256_id_and_dedupes(store):
    data = payload(3 << 20, 1)
    r = store.publish(data, name="blob")
    assert r["id"] == sid(data)
    assert r["size"] == len(data)
    assert r["name"] == "blob" and r["version"] == 1
    assert r["new_bytes"] > 0
    again = store.publish(bytearray(data), name="blob")
    assert again["id"] == r["id"]
    assert again["new_bytes"] == 0
    assert again["version"] == 2
    assert store.cat("blob@1") == data
    assert store.resolve("blob") == r["id"]
    assert store.exists(r["id"]) and not store.exists(sid(b"other"))


def test_every_kind_of_source(store, tmp_path):
    data = payload(2 << 20, 2)
    path = tmp_path / "in.bin"
    path.write_bytes(data)
    want = sid(data)
    assert store.publish(path)["id"] == want
    assert store.publish(str(path), name="p")["id"] == want
    assert store.publish(io.BytesIO(data))["id"] == want
    assert store.publish(memoryview(data)[1:])["id"] == sid(data[1:])
    arr = np.frombuffer(data, dtype=np.uint32)
    assert store.publish(arr)["id"] == want

    class ReadOnly:  # read() only, short reads
        def __init__(self):
            self.pos = 0

        def read(self, n):
            n = min(n, 1000, len(data) - self.pos)
            self.pos += n
            return data[self.pos - n:self.pos]

    assert store.publish(ReadOnly())["id"] == want
    with open(path, "rb") as f:
        assert store.publish(f, name="from-file")["id"] == want
    assert store.publish(b"")["id"] == sid(b"")
    with pytest.raises(TypeError):
        store.publish(12345)


def test_a_file_object_may_keep_the_buffer_it_was_given(store):
    data = payload(300000, 9)
    kept = []

    class Keeper:
        def __init__(self):
            self.f = io.BytesIO(data)

        def readinto(self, b):
            kept.append(b)
            return self.f.readinto(b)

    assert store.publish(Keeper())["id"] == sid(data)
    # What it kept is its own memory, still readable after the publish.
    assert all(len(bytes(b)) >= 0 for b in kept)


def test_a_failing_file_object_stores_nothing(store):
    store.publish(b"kept", name="kept")

    class Broken:
        def __init__(self):
            self.calls = 0

        def readinto(self, b):
            self.calls += 1
            if self.calls > 3:
                raise RuntimeError("disk went away")
            b[:4096] = bytes(4096)
            return 4096

    with pytest.raises(RuntimeError, match="disk went away"):
        store.publish(Broken(), name="broken")

    class Liar:  # claims more bytes than the buffer holds
        def readinto(self, b):
            return len(b) + 1

    with pytest.raises(chunkstore.Error, match="readinto returned"):
        store.publish(Liar(), name="broken")

    class NotANumber:
        def readinto(self, b):
            return "many"

    with pytest.raises(Exception) as e:
        store.publish(NotANumber(), name="broken")
    assert not isinstance(e.value, chunkstore.Error)
    assert [e["name"] for e in store.ls()] == ["kept"]
    with pytest.raises(chunkstore.NotFound):
        store.resolve("broken")


def test_the_object_file_reads_ranges_seeks_and_fills_numpy(store):
    data = payload(6 << 20, 3)
    oid = store.publish(data, name="big")["id"]
    assert store.stat("big")["chunks"] >= 3
    with store.open("big") as f:
        assert isinstance(f, io.RawIOBase)
        assert f.id == oid and f.size == len(data)
        assert f.readable() and f.seekable() and not f.writable()
        rng = random.Random(4)
        for _ in range(200):
            at = rng.randrange(len(data))
            n = rng.randrange(1, 3 << 20)
            f.seek(at)
            assert f.read(n) == data[at:at + n]
            assert f.tell() == at + len(data[at:at + n])
        f.seek(-10, io.SEEK_END)
        assert f.read() == data[-10:]
        assert f.read(5) == b""
        f.seek(len(data) + 100)
        assert f.read(1) == b"" and f.readinto(bytearray(8)) == 0
        f.seek(0)
        assert f.read() == data
        with pytest.raises(ValueError):
            f.seek(-1)
        # Sequential reads in pieces: the streaming path.
        f.seek(0)
        got = bytearray()
        while True:
            piece = f.read(65536 + 7)
            if not piece:
                break
            got += piece
        assert got == data
    with store.open(oid) as f:
        arr = np.empty(len(data) // 8, dtype=np.uint64)
        assert f.readinto(arr) == len(data)
        assert np.array_equal(arr, np.frombuffer(data, dtype=np.uint64))
        f.seek(12345)
        view = memoryview(bytearray(1000))
        assert f.readinto(view) == 1000 and view.tobytes() == data[12345:13345]
    with pytest.raises(ValueError):
        f.read(1)
    assert f.name == oid and oid in repr(f) and "closed" in repr(f)
    buffered = io.BufferedReader(store.open("big"))
    assert buffered.read(10) == data[:10]
    assert buffered.read1(5) == data[10:15]
    buffered.close()


def test_catalog_calls(store):
    a = store.publish(b"a" * 5000, name="dir/a")
    b = store.publish(b"b" * 5000, name="dir/b")
    store.publish(b"c" * 5000, name="other")
    assert [e["name"] for e in store.ls("dir/")] == ["dir/a", "dir/b"]
    entry = store.ls("dir/a")[0]
    assert set(entry) == {"name", "version", "id", "size", "created"} and entry["id"] == a["id"]
    t = store.tag("dir/b", "dir/a")
    assert t["version"] == 2 and t["id"] == b["id"]
    assert [v["version"] for v in store.log("dir/a")] == [2, 1]
    assert store.stat("dir/a")["names"] == ["dir/a", "dir/b"]
    store.rm(["dir/a", "dir/b"])
    assert [e["name"] for e in store.ls()] == ["other"]
    with pytest.raises(chunkstore.NotFound):
        store.rm("dir/a")
    store.rm_object("other")
    report = store.gc(grace_seconds=0)
    assert report["objects_removed"] + report["chunks_removed"] >= 0
    st = store.stats()
    assert st["names"] == 0 and st["compression"].startswith("zstd")
    assert store.verify()["corrupt"] is False


def test_trees_publish_and_restore(store, tmp_path):
    src = tmp_path / "tree"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "f.txt").write_bytes(b"hello tree")
    (src / "run.sh").write_bytes(b"#!/bin/sh\n")
    os.chmod(src / "run.sh", 0o755)
    os.symlink("sub/f.txt", src / "link")
    r = store.publish(src, name="t")
    assert r["files"] == 2 and r["symlinks"] == 1
    assert store.stat("t")["tree"] is True
    assert store.cat("t:sub/f.txt") == b"hello tree"
    dest = tmp_path / "out"
    store.restore("t", dest)
    assert (dest / "sub" / "f.txt").read_bytes() == b"hello tree"
    assert os.stat(dest / "run.sh").st_mode & 0o777 == 0o755
    assert os.readlink(dest / "link") == "sub/f.txt"


def test_bad_input_raises_its_class(store):
    store.publish(b"x" * 100, name="x")
    with pytest.raises(chunkstore.InvalidArgument) as e:
        store.open("sha256:zz")
    assert isinstance(e.value, ValueError) and e.value.exit_code == 2
    with pytest.raises(chunkstore.NotFound):
        store.open("no-such-name")
    with pytest.raises(chunkstore.NotFound):
        store.log("no-such-name")
    with pytest.raises(chunkstore.InvalidArgument):
        store.tag("x", "")
    with pytest.raises(TypeError):
        store.open(5)
    assert issubclass(chunkstore.Corruption, chunkstore.Error)
    assert chunkstore.Corruption.exit_code == 4 and chunkstore.PermissionDenied.exit_code == 5
    store.close()
    with pytest.raises(chunkstore.InvalidArgument, match="closed"):
        store.ls()


def test_threads_read_at_once(store):
    data = payload(8 << 20, 5)
    store.publish(data, name="shared")
    errors = []

    def reader(seed):
        try:
            rng = random.Random(seed)
            with store.open("shared") as f:
                for _ in range(30):
                    at = rng.randrange(len(data))
                    buf = bytearray(rng.randrange(1, 1 << 20))
                    f.seek(at)
                    n = f.readinto(buf)
                    assert buf[:n] == data[at:at + n]
                assert store.cat("shared") == data
        except BaseException as e:  # reported in the main thread
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_threads_sharing_one_file_get_each_byte_once(store):
    data = payload(4 << 20, 10)
    store.publish(data, name="shared")
    pieces = []
    lock = threading.Lock()
    step = 65536

    with store.open("shared") as f:
        def reader():
            while True:
                piece = f.read(step)
                if not piece:
                    return
                with lock:
                    pieces.append(piece)

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sum(len(p) for p in pieces) == len(data)
    offsets = sorted(data.find(p) for p in pieces)
    assert offsets == list(range(0, len(data), step))


def test_damage_raises_corruption_never_wrong_bytes(tmp_path):
    data = payload(6 << 20, 6)
    other = payload(100 << 10, 7)
    location = tmp_path / "store"
    with chunkstore.Store.open(location, create=True) as s:
        oid = s.publish(data, name="big")["id"]
        s.publish(other, name="small")
    packs = [location / "packs" / p for p in os.listdir(location / "packs")]
    biggest = max(packs, key=os.path.getsize)
    with open(biggest, "r+b") as f:
        f.seek(os.path.getsize(biggest) // 2)
        b = f.read(1)
        f.seek(-1, io.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x55]))
    with chunkstore.Store.open(location) as s:
        with pytest.raises(chunkstore.Corruption) as e:
            s.cat("big")
        assert e.value.object == oid
        assert e.value.chunk and len(e.value.chunk) == 64
        assert oid in str(e.value)
        # Whatever is returned before the error is the object's own bytes.
        with s.open("big") as f:
            got = bytearray()
            with pytest.raises(chunkstore.Corruption):
                while True:
                    piece = f.read(1 << 20)
                    if not piece:
                        break
                    got += piece
            assert len(got) < len(data) and got == data[:len(got)]
        arr = np.zeros(len(data), dtype=np.uint8)
        with s.open("big") as f, pytest.raises(chunkstore.Corruption):
            f.readinto(arr)
        # At random too (after a read elsewhere).
        with s.open("big") as f, pytest.raises(chunkstore.Corruption):
            f.seek(100)
            f.read(10)
            f.seek(0)
            f.read(len(data))
        report = s.verify()
        assert report["corrupt"] is True
        assert any(p["object"] == oid for p in report["problems"])
        assert s.cat("small") == other


def test_copy_to_and_repair_chunks_from_the_copy(tmp_path):
    data = payload(3 << 20, 8)
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    with chunkstore.Store.open(a_dir, create=True) as a, chunkstore.Store.open(b_dir, create=True) as b:
        oid = a.publish(data, name="big")["id"]
        copied = a.copy_to(b)
        assert copied["objects_copied"] == 1 and copied["chunks_sent"] >= 2
        assert b.cat("big") == data
        assert a.copy_to(b)["chunks_sent"] == 0
        with pytest.raises(TypeError):
            a.copy_to(str(b_dir))
    pack = a_dir / "packs" / os.listdir(a_dir / "packs")[0]
    with open(pack, "r+b") as f:
        f.seek(16 + 64 + 1000)
        b1 = f.read(1)
        f.seek(-1, io.SEEK_CUR)
        f.write(bytes([b1[0] ^ 0x01]))
    with chunkstore.Store.open(a_dir) as a, chunkstore.Store.open(b_dir) as b:
        assert a.verify()["corrupt"]
        with pytest.raises(chunkstore.Corruption):
            a.cat("big")
        r = a.repair_chunks(b)
        assert r["damaged"] == 1 and len(r["repaired"]) == 1 and r["unrepaired"] == []
        assert a.cat("big") == data
        assert not a.verify()["corrupt"]
        assert a.stat("big")["id"] == oid

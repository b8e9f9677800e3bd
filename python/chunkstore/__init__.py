# SPDX-License-Identifier: Apache-2.0
"""chunkstore: a content-addressed, chunked object store, from Python.

Open a store, publish payloads (a path, bytes or anything with the buffer
protocol, a file object, a directory as a tree) and read objects back as
seekable binary files whose every byte was verified against its SHA-256:

    import chunkstore
    with chunkstore.Store.open("/data/store", create=True) as store:
        r = store.publish(b"hello", name="greeting")
        with store.open("greeting") as f:
            assert f.read() == b"hello"

Results are plain dicts (the keys of the command's --json output);
failures raise chunkstore.Error subclasses that mirror the command's exit
codes: NotFound (3), Corruption (4, never a wrong byte), InvalidArgument
(2), PermissionDenied (5), Busy, NoSpace, Unsupported. The GIL is
released while reading, writing and hashing, so threads run in parallel.
docs/python.md has the tour.
"""

import io
import os
import types

from ._native import (Busy, Corruption, Error, InvalidArgument, NativeStore, NoSpace, NotFound, PermissionDenied,
                      Unsupported)

__all__ = ["Store", "ObjectFile", "default_location", "Error", "NotFound", "Corruption", "InvalidArgument",
           "PermissionDenied", "Busy", "NoSpace", "Unsupported"]


def default_location():
    """The store the command uses without --store: $CHUNKSTORE_DIR,
    $XDG_DATA_HOME/chunkstore, ~/.local/share/chunkstore, else .chunkstore."""
    for var, tail in (("CHUNKSTORE_DIR", ""), ("XDG_DATA_HOME", "/chunkstore"), ("HOME", "/.local/share/chunkstore")):
        value = os.environ.get(var)
        if value:
            return value + tail
    return ".chunkstore"


def _text(value, what):
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str or path, not {type(value).__name__}")
    return value


class ObjectFile(io.RawIOBase):
    """A stored object as a read-only, seekable binary file.

    readinto() fills any writable buffer (bytearray, memoryview, a numpy
    array) straight from verified chunks, with no intermediate copy, as far
    as the object goes. Reads that continue where the last one ended stream
    with read-ahead on other threads, and a read from the start to the end
    also proves the object's id; a jump is read at random. A read that
    meets damage raises Corruption (never a short count). Wrap it in
    io.BufferedReader for many small reads. Threads may share one file
    (each call is atomic, the position is shared); open one per thread to
    read in parallel.
    """

    def __init__(self, native):
        super().__init__()
        self._native = native
        self._id = native.id
        self._size = native.size

    @property
    def id(self):
        """The object's id, "sha256:<hex>"."""
        return self._id

    @property
    def size(self):
        """The object's size in bytes."""
        return self._size

    @property
    def name(self):
        return self._id

    def readable(self):
        return True

    def seekable(self):
        return True

    def writable(self):
        return False

    def readinto(self, buffer):
        self._check_closed()
        return self._native.readinto(buffer)

    def read(self, size=-1):
        self._check_closed()
        return self._native.read(-1 if size is None else size)

    def readall(self):
        return self.read(-1)

    def seek(self, offset, whence=io.SEEK_SET):
        self._check_closed()
        if whence not in (io.SEEK_SET, io.SEEK_CUR, io.SEEK_END):
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        return self._native.seek(offset, whence)

    def tell(self):
        self._check_closed()
        return self._native.tell()

    def close(self):
        if not self.closed:
            self._native.close()
        super().close()

    def _check_closed(self):
        if self.closed:
            raise ValueError("I/O operation on closed object file")

    def __repr__(self):
        return f"<chunkstore.ObjectFile {self._id} size={self._size}{' closed' if self.closed else ''}>"


class _StoreOrObject:
    """Store.open(location) opens a store; store.open(ref) opens an object."""

    def __init__(self, on_class, on_instance):
        self._on_class = on_class
        self._on_instance = on_instance
        self.__doc__ = f"{on_class.__doc__}\n\nOn a store: {on_instance.__doc__}"

    def __get__(self, instance, owner):
        if instance is None:
            return types.MethodType(self._on_class, owner)
        return types.MethodType(self._on_instance, instance)


class Store:
    """A chunkstore store: a directory, an s3:// bucket or an http:// server.

    Store.open(location) opens one; store.open(ref) opens an object in it.
    Thread safe: any method may be called from many threads at once.
    """

    def __init__(self, native, location):
        self._native = native
        self.location = location

    def _open_store(cls, location=None, *, create=False, read_only=False, secret_file=None, cache_mib=0):
        """Opens the store at location (a directory, s3://BUCKET/PREFIX or
        http://HOST:PORT; None: default_location()). create: make a
        directory store that does not exist yet. secret_file (or
        $CHUNKSTORE_SECRET_FILE): a bucket store's shared secret.
        cache_mib: verified chunks kept in memory for repeated reads
        (0: the library's default)."""
        location = default_location() if location is None else _text(location, "location")
        path = secret_file if secret_file is not None else os.environ.get("CHUNKSTORE_SECRET_FILE")
        secret = ""
        if path:
            with open(path, "rb") as f:
                secret = f.read().decode("utf-8").rstrip("\r\n")
            if not secret:
                raise InvalidArgument(f"the secret file {path} is empty")
        return cls(NativeStore.open(location, create, secret, read_only, cache_mib), location)

    def close(self):
        """Closes the store; readers already open stay usable."""
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<chunkstore.Store {self.location!r}>"

    def publish(self, source, name=None, *, force_hash=False):
        """Stores source and returns {"id", "size", "chunks", "reused_chunks",
        "new_bytes", "name", "version"}. source: a path (str or
        os.PathLike, not bytes; a directory is published as a tree, and the result is
        the tree's, with files/directories/symlinks counts), an object with
        the buffer protocol (bytes, bytearray, memoryview, numpy array), or
        a binary file object (readinto or read). name: a name to point at
        it, as its next version."""
        name = "" if name is None else _text(name, "name")
        if isinstance(source, (str, os.PathLike)):
            path = _text(source, "path")
            if os.path.isdir(path):
                return self._native.publish_tree(path, name, force_hash)
            return self._native.publish_file(path, name)
        if hasattr(source, "readinto") or hasattr(source, "read"):
            return self._native.publish_file_object(source, name)
        try:
            memoryview(source)
        except TypeError:
            raise TypeError("publish takes a path, a bytes-like object or a binary file object, not "
                            f"{type(source).__name__}") from None
        return self._native.publish_buffer(source, name)

    def _open_object(self, ref):
        """The object ref names (id, id prefix, NAME, NAME@N, TREE:PATH) as an
        ObjectFile."""
        return ObjectFile(self._native.open_reader(_text(ref, "ref")))

    open = _StoreOrObject(_open_store, _open_object)

    def cat(self, ref):
        """The whole object as bytes (verified, and its id proven)."""
        with self.open(ref) as f:
            return f.read()

    def resolve(self, ref):
        """The id a ref names now."""
        return self._native.resolve(_text(ref, "ref"))

    def exists(self, ref):
        """True if ref names a stored object."""
        return self._native.exists(_text(ref, "ref"))

    def stat(self, ref):
        """{"id", "size", "chunks", "stored_bytes", "inline", "compressed_chunks",
        "created", "pinned", "tree", "names"}."""
        return self._native.stat(_text(ref, "ref"))

    def ls(self, prefix=""):
        """The latest version of every name starting with prefix, sorted:
        [{"name", "version", "id", "size", "created"}]."""
        return self._native.ls(_text(prefix, "prefix"))

    def log(self, name):
        """Every version of a name, newest first."""
        return self._native.log(_text(name, "name"))

    def tag(self, ref, name):
        """Points name at what ref names, as its next version."""
        return self._native.tag(_text(ref, "ref"), _text(name, "name"))

    def rm(self, names):
        """Forgets one name or a list of names with their history, all or
        none. Objects stay until nothing names them and gc runs."""
        if isinstance(names, (str, os.PathLike)):
            names = [names]
        return self._native.remove_names([_text(n, "name") for n in names])

    def rm_object(self, ref):
        """Forgets an object and every name version that points at it."""
        return self._native.remove_object(_text(ref, "ref"))

    def restore(self, ref, dest, *, delete=False, verify_existing=False, sparse=True):
        """Recreates what ref names (a tree as a directory, an object as a
        file) at dest."""
        return self._native.restore(_text(ref, "ref"), _text(dest, "dest"), delete, verify_existing, sparse)

    def gc(self, *, dry_run=False, grace_seconds=None):
        """Reclaims the space of chunks no live object needs."""
        return self._native.gc(dry_run, -1 if grace_seconds is None else int(grace_seconds))

    def verify(self, refs=None, *, quick=False):
        """Re-reads and checks stored data; damage is reported in
        "problems" (and "corrupt" is True), not raised."""
        return self._native.verify(quick, [_text(r, "ref") for r in (refs or [])])

    def copy_to(self, other, refs=None):
        """Copies names (with their history), PREFIX/ sets of names or
        objects (default: everything) into the Store other, sending only
        the chunks it lacks; other proves every object's id before it
        records it. Returns counts as `chunkstore copy --json` does."""
        if not isinstance(other, Store):
            raise TypeError("copy_to takes a Store")
        return self._native.copy_to(other._native, [_text(r, "ref") for r in (refs or [])])

    def repair_chunks(self, source):
        """Writes the chunks this store holds damaged (or lacks) again from
        the Store source's copies, each checked against its id; what source
        cannot give is listed in "unrepaired" (see `chunkstore repair
        chunks`)."""
        if not isinstance(source, Store):
            raise TypeError("repair_chunks takes a Store")
        return self._native.repair_chunks(source._native)

    def stats(self):
        """Counts and sizes: objects, names, chunks, logical/unique/stored
        bytes, packs, ratios, compression."""
        return self._native.stats()

    def refresh(self):
        """Bucket stores: takes in what other machines published since."""
        return self._native.refresh()

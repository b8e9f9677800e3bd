// SPDX-License-Identifier: Apache-2.0
// The native half of the chunkstore Python package (chunkstore._native):
// the Store and its verified object reader over the C++ library, with
// results as plain dicts and failures as exception classes that mirror the
// command's exit codes. The Python half (chunkstore/__init__.py) wraps the
// reader in an io.RawIOBase file object.
//
// The GIL is released around everything that reads, writes or hashes, so
// Python threads run those in parallel: a Store is thread safe (store.h),
// and each NativeReader serialises its own cursor with a mutex. A caller's
// buffer is held through the buffer protocol while the GIL is released;
// the exporter (bytearray, numpy) cannot resize it meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/store.h"

namespace py = pybind11;

namespace chunkstore {
namespace {

// A failed Status on its way to Python; the translator below picks the class.
struct StatusError : std::exception {
  explicit StatusError(Status s) : status(std::move(s)) {}
  const char* what() const noexcept override { return status.message().c_str(); }
  Status status;
};

void Check(const Status& s) {
  if (!s.ok()) throw StatusError(s);
}

template <class T>
T Take(Result<T> r) {
  if (!r.ok()) throw StatusError(r.status());
  return std::move(*r);
}

// The exception classes, owned by the module (which outlives every call).
struct Errors {
  PyObject* error = nullptr;
  PyObject* not_found = nullptr;
  PyObject* corruption = nullptr;
  PyObject* invalid = nullptr;
  PyObject* denied = nullptr;
  PyObject* busy = nullptr;
  PyObject* unsupported = nullptr;
  PyObject* no_space = nullptr;
};
Errors g_errors;

PyObject* ClassFor(Code code) {
  switch (code) {
    case Code::kNotFound: return g_errors.not_found;
    case Code::kCorruption: return g_errors.corruption;
    case Code::kInvalidArgument: return g_errors.invalid;
    case Code::kPermissionDenied: return g_errors.denied;
    case Code::kBusy: return g_errors.busy;
    case Code::kUnsupported: return g_errors.unsupported;
    case Code::kNoSpace: return g_errors.no_space;
    default: return g_errors.error;
  }
}

// Messages quote names and paths, which need not be UTF-8.
py::str Text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

void Raise(const Status& s) {
  PyObject* cls = ClassFor(s.code());
  py::object exc = py::reinterpret_borrow<py::object>(cls)(Text(s.message()));
  exc.attr("object") = s.object_id().empty() ? py::object(py::none()) : py::object(Text(s.object_id()));
  exc.attr("chunk") = s.chunk_id().empty() ? py::object(py::none()) : py::object(Text(s.chunk_id()));
  PyErr_SetObject(cls, exc.ptr());
}

PyObject* NewError(py::module_& m, const char* name, PyObject* bases, int exit_code, const char* doc) {
  const std::string qualified = std::string("chunkstore.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  py::object owned = py::reinterpret_steal<py::object>(cls);
  owned.attr("exit_code") = exit_code;
  owned.attr("object") = py::none();
  owned.attr("chunk") = py::none();
  m.add_object(name, owned);
  return cls;
}

// A caller's contiguous buffer, held for as long as this lives.
class HeldBuffer {
 public:
  HeldBuffer(const py::handle& obj, bool writable) {
    if (PyObject_GetBuffer(obj.ptr(), &view_, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) != 0)
      throw py::error_already_set();
  }
  ~HeldBuffer() { PyBuffer_Release(&view_); }
  HeldBuffer(const HeldBuffer&) = delete;
  HeldBuffer& operator=(const HeldBuffer&) = delete;
  uint8_t* data() const { return static_cast<uint8_t*>(view_.buf); }
  size_t size() const { return static_cast<size_t>(view_.len); }
  bool readonly() const { return view_.readonly != 0; }

 private:
  Py_buffer view_{};
};

py::dict PublishDict(const PublishResult& r) {
  py::dict d;
  d["id"] = r.id;
  d["size"] = r.size;
  d["chunks"] = r.chunks;
  d["reused_chunks"] = r.reused_chunks;
  d["new_bytes"] = r.new_bytes;
  d["name"] = r.name.empty() ? py::object(py::none()) : py::object(Text(r.name));
  d["version"] = r.version;
  return d;
}

py::dict NameDict(const NameEntry& e) {
  py::dict d;
  d["name"] = Text(e.name);
  d["version"] = e.version;
  d["id"] = e.id;
  d["size"] = e.size;
  d["created"] = e.created;
  return d;
}

py::dict ObjectDict(const ObjectInfo& o) {
  py::dict d;
  d["id"] = o.id;
  d["size"] = o.size;
  d["chunks"] = o.chunks;
  d["stored_bytes"] = o.stored_bytes;
  d["inline"] = o.stored_inline;
  d["compressed_chunks"] = o.compressed_chunks;
  d["created"] = o.created;
  d["pinned"] = o.pinned;
  d["tree"] = o.tree;
  py::list names;
  for (const std::string& n : o.names) names.append(Text(n));
  d["names"] = names;
  return d;
}

// One open object, with its own position. Sequential reads go through the
// reader's cursor, which reads ahead and verifies on other threads (and,
// from the start, proves the object's id); a jump is read at random
// (through the store's chunk cache) until reads continue from where the
// last one ended. A read that meets damage raises: never a short count
// that could pass for the end of the object.
class NativeReader {
 public:
  explicit NativeReader(std::unique_ptr<Reader> r)
      : reader_(std::move(r)), id_(reader_->id()), size_(reader_->size()) {}

  const std::string& id() const { return id_; }
  uint64_t size() const { return size_; }

  // Fills buf from the position, as far as the object goes (0 at its
  // end), and moves the position past what it read.
  size_t ReadInto(uint8_t* buf, size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t got = ReadLocked(pos_, buf, n);
    pos_ += got;
    return got;
  }

  uint64_t Seek(int64_t offset, int whence) {
    std::lock_guard<std::mutex> lock(mu_);
    const int64_t base = whence == 0 ? 0 : whence == 1 ? static_cast<int64_t>(pos_) : static_cast<int64_t>(size_);
    if (whence < 0 || whence > 2)
      throw StatusError(Status::InvalidArgument("invalid whence (" + std::to_string(whence) + ", should be 0, 1 or 2)"));
    const int64_t to = base + offset;
    if (to < 0) throw StatusError(Status::InvalidArgument("negative seek position " + std::to_string(to)));
    pos_ = static_cast<uint64_t>(to);
    return pos_;
  }

  uint64_t Tell() {
    std::lock_guard<std::mutex> lock(mu_);
    return pos_;
  }

  void Close() {
    std::unique_ptr<Reader> gone;
    std::lock_guard<std::mutex> lock(mu_);
    gone.swap(reader_);
  }

 private:
  size_t ReadLocked(uint64_t offset, uint8_t* buf, size_t n) {
    if (!reader_) throw StatusError(Status::InvalidArgument("read from a closed object file"));
    if (offset >= size_) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    const bool cursor = offset == reader_->Tell() && offset != last_random_;
    const bool streaming = !cursor && offset == last_end_ && offset != 0;
    if (streaming || (!cursor && offset == 0)) {
      // The second read in a row from where the last ended, or a read
      // from the start (which the reader then proves whole): streaming.
      Check(reader_->Seek(offset));
    } else if (!cursor) {
      size_t done = 0;
      while (done < n) {
        const size_t got = Take(reader_->ReadAt(offset + done, buf + done, n - done));
        if (got == 0) break;
        done += got;
      }
      last_end_ = offset + done;
      last_random_ = offset;
      return done;
    }
    size_t done = 0;
    while (done < n) {
      const size_t got = Take(reader_->Read(buf + done, n - done));
      if (got == 0) break;
      done += got;
    }
    last_end_ = offset + done;
    last_random_ = UINT64_MAX;
    return done;
  }

  std::mutex mu_;
  std::unique_ptr<Reader> reader_;
  const std::string id_;
  const uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t last_end_ = UINT64_MAX;
  uint64_t last_random_ = UINT64_MAX;
};

class PyStore {
 public:
  explicit PyStore(std::unique_ptr<Store> s) : store_(std::move(s)) {}

  // Each call holds its own reference, so close() during another thread's
  // call waits for nothing and frees the store when that call ends.
  std::shared_ptr<Store> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!store_) throw StatusError(Status::InvalidArgument("the store is closed"));
    return store_;
  }
  void Close() {
    std::shared_ptr<Store> gone;
    std::lock_guard<std::mutex> lock(mu_);
    gone.swap(store_);
  }

 private:
  std::mutex mu_;
  std::shared_ptr<Store> store_;
};

std::unique_ptr<PyStore> OpenStore(const std::string& location, bool create, const std::string& secret,
                                   bool read_only, size_t cache_mib) {
  Options o;
  o.create_if_missing = create;
  o.secret = secret;
  o.read_only = read_only;
  if (cache_mib) o.cache_bytes = cache_mib << 20;
  std::unique_ptr<Store> s;
  {
    py::gil_scoped_release nogil;
    s = Take(Store::Open(location, o));
  }
  return std::make_unique<PyStore>(std::move(s));
}

// Runs fn on the store without the GIL; what it returns is a plain C++
// value, turned into Python objects by the caller with the GIL held.
template <class Fn>
auto NoGil(PyStore& ps, Fn fn) {
  auto s = ps.Get();
  py::gil_scoped_release nogil;
  return fn(*s);
}

py::dict PublishFile(PyStore& ps, const std::string& path, const std::string& name) {
  return PublishDict(NoGil(ps, [&](Store& s) { return Take(s.PublishFile(path, name)); }));
}

// A read-only buffer (bytes) is published in place. A writable one
// (bytearray, a numpy array) is copied into the library's buffers in one
// pass, as a stream: another thread writing to it meanwhile could
// otherwise change bytes between their hashing and their storing.
py::dict PublishBuffer(PyStore& ps, const py::object& data, const std::string& name) {
  auto s = ps.Get();
  HeldBuffer b(data, false);
  PublishResult r;
  if (b.readonly())
    return PublishDict(NoGil(ps, [&](Store& st) { return Take(st.PublishBytes(b.data(), b.size(), name)); }));
  size_t at = 0;
  Store::PullFn pull = [&](void* buf, size_t n) -> Result<size_t> {
    const size_t k = std::min(n, b.size() - at);
    std::memcpy(buf, b.data() + at, k);
    at += k;
    return k;
  };
  {
    py::gil_scoped_release nogil;
    r = Take(s->PublishPull(pull, name));
  }
  return PublishDict(r);
}

// A file object is pulled through readinto (or read) under the GIL, one
// buffer at a time, into a bytearray of its own: no Python object ever
// points into the library's memory. Hashing and writing run without the
// GIL.
py::dict PublishFileObject(PyStore& ps, const py::object& f, const std::string& name) {
  auto s = ps.Get();
  const bool has_readinto = py::hasattr(f, "readinto");
  // What the file object raised (or a bad return value's cast error),
  // raised again once the publish has given up; nothing may unwind
  // through the library.
  std::exception_ptr failed;
  py::object scratch;
  Store::PullFn pull = [&](void* buf, size_t n) -> Result<size_t> {
    py::gil_scoped_acquire gil;
    try {
      py::object got;
      size_t k = 0;
      if (has_readinto) {
        if (!scratch || static_cast<size_t>(py::len(scratch)) != n)
          scratch = py::reinterpret_steal<py::object>(PyByteArray_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
        if (!scratch) throw py::error_already_set();
        got = f.attr("readinto")(scratch);
        if (got.is_none()) return Status::IOError("the file object has no data ready (non-blocking)");
        const long long claimed = got.cast<long long>();
        if (claimed < 0 || static_cast<size_t>(claimed) > n)
          return Status::IOError("the file object's readinto returned " + std::to_string(claimed));
        // It may have been resized meanwhile: only what is there counts.
        k = std::min<size_t>(static_cast<size_t>(claimed), static_cast<size_t>(PyByteArray_Size(scratch.ptr())));
        std::memcpy(buf, PyByteArray_AsString(scratch.ptr()), k);
        return k;
      }
      got = f.attr("read")(n);
      if (got.is_none()) return Status::IOError("the file object has no data ready (non-blocking)");
      HeldBuffer b(got, false);
      if (b.size() > n) return Status::IOError("the file object's read returned more than asked");
      std::memcpy(buf, b.data(), b.size());
      return b.size();
    } catch (...) {
      failed = std::current_exception();
      return Status::IOError("reading the file object failed");
    }
  };
  std::optional<Result<PublishResult>> r;
  {
    py::gil_scoped_release nogil;
    r.emplace(s->PublishPull(pull, name));
  }
  if (failed) std::rethrow_exception(failed);
  return PublishDict(Take(std::move(*r)));
}

py::dict PublishTree(PyStore& ps, const std::string& dir, const std::string& name, bool force_hash) {
  TreePublishOptions o;
  o.force_hash = force_hash;
  TreePublishResult r = NoGil(ps, [&](Store& s) { return Take(s.PublishTree(dir, name, o)); });
  py::dict d;
  d["id"] = r.id;
  d["name"] = r.name.empty() ? py::object(py::none()) : py::object(Text(r.name));
  d["version"] = r.version;
  d["files"] = r.files;
  d["directories"] = r.directories;
  d["symlinks"] = r.symlinks;
  d["bytes"] = r.bytes;
  d["files_read"] = r.files_read;
  d["files_cached"] = r.files_cached;
  d["skipped"] = r.skipped;
  d["new_bytes"] = r.new_bytes;
  return d;
}

py::dict Restore(PyStore& ps, const std::string& ref, const std::string& dest, bool delete_extra,
                 bool verify_existing, bool sparse) {
  RestoreOptions o;
  o.delete_extra = delete_extra;
  o.verify_existing = verify_existing;
  o.sparse = sparse;
  RestoreReport r = NoGil(ps, [&](Store& s) { return Take(s.Restore(ref, dest, o)); });
  py::dict d;
  d["files_written"] = r.files_written;
  d["files_unchanged"] = r.files_unchanged;
  d["bytes_written"] = r.bytes_written;
  d["directories"] = r.directories;
  d["symlinks_written"] = r.symlinks_written;
  d["metadata_fixed"] = r.metadata_fixed;
  d["removed"] = r.removed;
  return d;
}

std::unique_ptr<NativeReader> OpenReader(PyStore& ps, const std::string& ref) {
  return std::make_unique<NativeReader>(NoGil(ps, [&](Store& s) { return Take(s.OpenReader(ref)); }));
}

size_t ReaderReadInto(NativeReader& r, const py::object& buffer) {
  HeldBuffer b(buffer, true);
  py::gil_scoped_release nogil;
  return r.ReadInto(b.data(), b.size());
}

// Up to n bytes (n < 0: all that is left) as a new bytes object, filled
// without the GIL (nothing else can see it before it is returned).
py::bytes ReaderRead(NativeReader& r, int64_t n) {
  const uint64_t pos = r.Tell();
  const uint64_t left = pos < r.size() ? r.size() - pos : 0;
  const size_t want = static_cast<size_t>(n < 0 ? left : std::min<uint64_t>(uint64_t(n), left));
  PyObject* o = PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(want));
  if (!o) throw py::error_already_set();
  py::object owned = py::reinterpret_steal<py::object>(o);
  size_t done = 0;
  {
    py::gil_scoped_release nogil;
    done = r.ReadInto(reinterpret_cast<uint8_t*>(PyBytes_AS_STRING(o)), want);
  }
  // Another thread sharing the file moved its position in between.
  if (done < want && _PyBytes_Resize(&o, static_cast<Py_ssize_t>(done)) != 0) {
    owned.release();  // _PyBytes_Resize freed it
    throw py::error_already_set();
  }
  owned.release();
  return py::reinterpret_steal<py::bytes>(o);
}

py::list Ls(PyStore& ps, const std::string& prefix) {
  auto v = NoGil(ps, [&](Store& s) { return Take(s.List(prefix)); });
  py::list out;
  for (const NameEntry& e : v) out.append(NameDict(e));
  return out;
}

py::list Log(PyStore& ps, const std::string& name) {
  auto v = NoGil(ps, [&](Store& s) { return Take(s.History(name)); });
  py::list out;
  for (const NameEntry& e : v) out.append(NameDict(e));
  return out;
}

py::dict Gc(PyStore& ps, bool dry_run, int64_t grace_seconds) {
  GcOptions o;
  o.dry_run = dry_run;
  if (grace_seconds >= 0) o.orphan_grace_seconds = grace_seconds;
  GcReport r = NoGil(ps, [&](Store& s) { return Take(s.Gc(o)); });
  py::dict d;
  d["objects_removed"] = r.objects_removed;
  d["chunks_removed"] = r.chunks_removed;
  d["packs_deleted"] = r.packs_deleted;
  d["packs_compacted"] = r.packs_compacted;
  d["packs_merged"] = r.packs_merged;
  d["packs_skipped"] = r.packs_skipped;
  d["bytes_reclaimed"] = r.bytes_reclaimed;
  d["uploads_aborted"] = r.uploads_aborted;
  d["packs_damaged"] = r.packs_damaged;
  d["dry_run"] = dry_run;
  return d;
}

py::dict CopyTo(PyStore& ps, PyStore& dst, const std::vector<std::string>& refs) {
  std::shared_ptr<Store> to = dst.Get();
  CopyReport r = NoGil(ps, [&](Store& s) { return Take(s.CopyTo(*to, refs)); });
  py::dict d;
  d["objects_copied"] = r.objects_copied;
  d["objects_present"] = r.objects_present;
  d["chunks_sent"] = r.chunks_sent;
  d["chunks_skipped"] = r.chunks_skipped;
  d["bytes_sent"] = r.bytes_sent;
  d["name_versions"] = r.name_versions;
  d["commits"] = r.commits;
  d["requests"] = r.requests;
  d["diverged"] = r.diverged;
  return d;
}

py::dict RepairChunks(PyStore& ps, PyStore& source) {
  std::shared_ptr<Store> from = source.Get();
  RepairReport r = NoGil(ps, [&](Store& s) { return Take(s.RepairChunks(*from)); });
  py::dict d;
  d["damaged"] = r.damaged;
  d["repaired"] = r.repaired;
  py::list unrepaired;
  for (const RepairReport::Unrepaired& u : r.unrepaired) {
    py::dict e;
    e["chunk"] = u.chunk_id;
    e["reason"] = u.reason;
    e["objects"] = u.objects;
    unrepaired.append(e);
  }
  d["unrepaired"] = unrepaired;
  d["bytes_written"] = r.bytes_written;
  d["packs"] = r.packs;
  d["pack_files"] = r.pack_files;
  d["other_problems"] = r.other_problems;
  return d;
}

py::dict Verify(PyStore& ps, bool quick, const std::vector<std::string>& refs) {
  VerifyOptions o;
  o.quick = quick;
  o.refs = refs;
  VerifyReport r = NoGil(ps, [&](Store& s) { return Take(s.Verify(o)); });
  py::dict d;
  d["objects_checked"] = r.objects_checked;
  d["chunks_checked"] = r.chunks_checked;
  d["bytes_checked"] = r.bytes_checked;
  d["corrupt"] = r.corrupt();
  py::list problems;
  for (const VerifyProblem& p : r.problems) {
    py::dict e;
    e["kind"] = p.kind;
    e["object"] = p.object_id.empty() ? py::object(py::none()) : py::object(Text(p.object_id));
    e["chunk"] = p.chunk_id.empty() ? py::object(py::none()) : py::object(Text(p.chunk_id));
    e["pack"] = p.pack.empty() ? py::object(py::none()) : py::object(Text(p.pack));
    e["offset"] = p.offset;
    e["message"] = Text(p.message);
    problems.append(e);
  }
  d["problems"] = problems;
  return d;
}

py::dict Stats(PyStore& ps) {
  auto s = ps.Get();
  StoreStats r;
  {
    py::gil_scoped_release nogil;
    r = Take(s->Stats());
  }
  py::dict d;
  d["objects"] = r.objects;
  d["names"] = r.names;
  d["chunks"] = r.chunks;
  d["logical_bytes"] = r.logical_bytes;
  d["unique_bytes"] = r.unique_bytes;
  d["stored_bytes"] = r.stored_bytes;
  d["inline_objects"] = r.inline_objects;
  d["pack_count"] = r.pack_count;
  d["pack_bytes"] = r.pack_bytes;
  d["garbage_bytes"] = r.garbage_bytes;
  d["dedupe_ratio"] = r.dedupe_ratio();
  d["compression_ratio"] = r.compression_ratio();
  d["compression"] = s->compression().ToString();
  d["location"] = Text(s->dir());
  d["bucket"] = s->is_bucket();
  return d;
}

}  // namespace
}  // namespace chunkstore

PYBIND11_MODULE(_native, m) {
  using namespace chunkstore;
  m.doc() = "chunkstore's native half; use the chunkstore package";

  g_errors.error = NewError(m, "Error", PyExc_Exception, 1,
                            "A chunkstore call failed (the command's exit code 1: I/O and other failures).");
  py::tuple not_found_bases = py::make_tuple(py::handle(g_errors.error), py::handle(PyExc_LookupError));
  g_errors.not_found = NewError(m, "NotFound", not_found_bases.ptr(), 3, "No such object, name, path or store.");
  g_errors.corruption =
      NewError(m, "Corruption", g_errors.error, 4,
               "Stored data failed verification; .object and .chunk name what was damaged. No byte of it "
               "was returned.");
  py::tuple invalid_bases = py::make_tuple(py::handle(g_errors.error), py::handle(PyExc_ValueError));
  g_errors.invalid = NewError(m, "InvalidArgument", invalid_bases.ptr(), 2, "A malformed ref, name or argument.");
  g_errors.denied = NewError(m, "PermissionDenied", g_errors.error, 5,
                             "The storage refused the credentials or the access.");
  g_errors.busy = NewError(m, "Busy", g_errors.error, 1, "Another process held the store too long.");
  g_errors.unsupported =
      NewError(m, "Unsupported", g_errors.error, 1, "The store was written by a newer chunkstore, or the "
                                                    "operation does not apply to this kind of store.");
  g_errors.no_space = NewError(m, "NoSpace", g_errors.error, 1, "The disk or quota is full; nothing was changed.");

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      Raise(e.status);
    }
  });

  py::class_<NativeReader>(m, "NativeReader")
      .def_property_readonly("id", &NativeReader::id)
      .def_property_readonly("size", &NativeReader::size)
      .def("readinto", &ReaderReadInto, py::arg("buffer"))
      .def("read", &ReaderRead, py::arg("n"))
      .def("seek", &NativeReader::Seek, py::arg("offset"), py::arg("whence"), py::call_guard<py::gil_scoped_release>())
      .def("tell", &NativeReader::Tell, py::call_guard<py::gil_scoped_release>())
      .def("close", &NativeReader::Close, py::call_guard<py::gil_scoped_release>());

  py::class_<PyStore>(m, "NativeStore")
      .def_static("open", &OpenStore, py::arg("location"), py::arg("create"), py::arg("secret"), py::arg("read_only"),
                  py::arg("cache_mib"))
      .def("close", &PyStore::Close, py::call_guard<py::gil_scoped_release>())
      .def("publish_file", &PublishFile)
      .def("publish_buffer", &PublishBuffer)
      .def("publish_file_object", &PublishFileObject)
      .def("publish_tree", &PublishTree)
      .def("restore", &Restore)
      .def("open_reader", &OpenReader)
      .def("resolve", [](PyStore& ps, const std::string& ref) { return NoGil(ps, [&](Store& s) {
             return Take(s.Resolve(ref)); }); })
      .def("exists", [](PyStore& ps, const std::string& ref) { return NoGil(ps, [&](Store& s) {
             return Take(s.Exists(ref)); }); })
      .def("stat", [](PyStore& ps, const std::string& ref) {
             return ObjectDict(NoGil(ps, [&](Store& s) { return Take(s.Stat(ref)); })); })
      .def("ls", &Ls)
      .def("log", &Log)
      .def("tag", [](PyStore& ps, const std::string& ref, const std::string& name) {
             return NameDict(NoGil(ps, [&](Store& s) { return Take(s.Tag(ref, name)); })); })
      .def("remove_names", [](PyStore& ps, const std::vector<std::string>& names) {
             NoGil(ps, [&](Store& s) { Check(s.RemoveNames(names)); return 0; }); })
      .def("remove_object", [](PyStore& ps, const std::string& ref) {
             NoGil(ps, [&](Store& s) { Check(s.RemoveObject(ref)); return 0; }); })
      .def("gc", &Gc)
      .def("verify", &Verify)
      .def("copy_to", &CopyTo)
      .def("repair_chunks", &RepairChunks)
      .def("stats", &Stats)
      .def("refresh", [](PyStore& ps) { NoGil(ps, [&](Store& s) { Check(s.Refresh()); return 0; }); });
}

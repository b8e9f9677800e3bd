// SPDX-License-Identifier: Apache-2.0
// The chunkstore subcommands over the library (see main.cc for parsing).
#include "commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common.h"
#include "terminal.h"
#include "backend/sparse_file.h"

namespace cli {

using chunkstore::Result;
using chunkstore::Status;
namespace fs = std::filesystem;

namespace {

// Reserves the disk blocks for `bytes` more at the end of a regular file
// the output is appended to, before any is written. The file's size is
// left alone (FALLOC_FL_KEEP_SIZE), so it still grows only as bytes are
// written and a failed read leaves a correct prefix. Writing into blocks
// the file already owns spares the kernel's delayed allocation its
// page-by-page space accounting, which on ext4 is a large part of what
// taking new data into the page cache costs the one writing thread
// (write-file-reserved against write-file-cached in docs/performance.md).
// Best effort: where the file system cannot preallocate, or space is
// short, the writes go on as before and report their own errors. A read
// that fails part-way leaves the unused reservation allocated past the
// end of the file until the file is truncated or removed: releasing it
// from here could cut bytes another writer appended meanwhile.
void ReserveOutput(int fd, uint64_t bytes) {
#ifdef __linux__
  struct stat st;
  if (bytes == 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return;
  // Opened to append (>>): every write lands at the end, wherever the
  // offset is.
  const off_t at = (flags & O_APPEND) ? st.st_size : ::lseek(fd, 0, SEEK_CUR);
  if (at != st.st_size) return;  // writing inside the file: its blocks are its own business
  // Not when the bytes cannot fit: a reservation that fails part-way may
  // keep what it got, and the writes will report the shortage anyway.
  struct statvfs fs;
  if (::fstatvfs(fd, &fs) != 0 || static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize <= bytes) return;
  ::fallocate(fd, FALLOC_FL_KEEP_SIZE, at, static_cast<off_t>(bytes));
#else
  (void)fd;
  (void)bytes;
#endif
}

// Where `cat -o FILE` writes. A regular file is written as an unnamed
// file in FILE's directory (O_TMPFILE) and given its name only when every
// byte is verified and synced, so a failed or killed read leaves nothing
// behind, not even a temporary name. Where the file system has no
// O_TMPFILE, a named temporary file beside FILE is used and removed on
// failure (a kill can then leave it). A device or FIFO (-o /dev/null) is
// written in place. Destroying an uncommitted OutputFile discards it.
class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile() {
    if (fd_ != STDOUT_FILENO && fd_ >= 0) ::close(fd_);
    if (!tmp_.empty()) ::unlinkat(dir_fd_, tmp_.c_str(), 0);
    if (dir_fd_ >= 0) ::close(dir_fd_);
  }

  // Opens path for writing; store_dir is the store's directory (or its
  // URL), which FILE may not be inside: writing there could destroy the
  // store (InvalidArgument). Every later step works on the directory
  // opened here, by its descriptor, so that renaming or replacing a
  // directory on the way meanwhile cannot send the file elsewhere.
  Status Open(const std::string& path, const std::string& store_dir) {
    path_ = path;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      if (S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + " is a directory");
      // A device or a pipe (perhaps by a symlink: /dev/stdout). Checked
      // again once open, without O_TRUNC: a regular file put there meanwhile
      // is left as it was and written the usual way below.
      const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
      if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        special_ = true;
        fd_ = fd;
        return Status::OK();
      }
      ::close(fd);
    }
    std::error_code ec;
    const fs::path full = fs::absolute(fs::path(path), ec);
    name_ = full.filename().string();
    if (name_.empty() || name_ == "." || name_ == "..") return Status::InvalidArgument(path + " is a directory");
    dir_ = full.parent_path().string();
    dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
    if (!store_dir.empty() && store_dir.rfind("s3://", 0) != 0) {
      // By device and inode, up from FILE's directory as opened, so that no
      // other name for the store (a symlink, a bind mount) gets past.
      struct stat store_st;
      if (::stat(store_dir.c_str(), &store_st) == 0) {
        int d = ::dup(dir_fd_);
        for (int depth = 0; d >= 0 && depth < 4096; ++depth) {
          struct stat here, up;
          if (::fstat(d, &here) != 0) break;
          if (here.st_dev == store_st.st_dev && here.st_ino == store_st.st_ino) {
            ::close(d);
            return Status::InvalidArgument("refusing to write " + path + " inside the store directory " + store_dir);
          }
          const int parent = ::openat(d, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
          ::close(d);
          d = parent;
          if (d < 0 || ::fstat(d, &up) != 0 || (up.st_dev == here.st_dev && up.st_ino == here.st_ino)) break;
        }
        if (d >= 0) ::close(d);
      }
    }
#ifdef O_TMPFILE
    // linkat through /proc/self/fd: naming an O_TMPFILE file needs no
    // privilege that way (AT_EMPTY_PATH would).
    if (::access("/proc/self/fd", X_OK) == 0) {
      fd_ = ::openat(dir_fd_, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
      if (fd_ >= 0) return Status::OK();
    }
#endif
    for (int attempt = 0;; ++attempt) {
      std::string name = name_ + ".chunkstore-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
      const mode_t mask = ::umask(0);
      ::umask(mask);
      fd_ = ::openat(dir_fd_, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666 & ~mask);
      if (fd_ >= 0) {
        tmp_ = std::move(name);
        return Status::OK();
      }
      if (errno != EEXIST || attempt > 100)
        return Status::IOError("cannot create a file beside " + path + ": " + std::strerror(errno));
    }
  }

  int fd() const { return fd_; }
  bool special() const { return special_; }

  // Makes the written bytes durable and gives them the requested name
  // (replacing a file there). Stdout and devices only need closing.
  Status Commit() {
    if (fd_ == STDOUT_FILENO) return Status::OK();
    if (special_) {
      const int rc = ::close(fd_);
      fd_ = -1;
      if (rc != 0) return Status::IOError("cannot write " + path_ + ": " + std::strerror(errno));
      return Status::OK();
    }
    if (::fsync(fd_) != 0) return Status::IOError("cannot write " + path_ + ": " + std::strerror(errno));
    if (tmp_.empty()) {
      const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
      // Straight to the name when it is free; else under a fresh name,
      // renamed over the old file (the only moment a kill could leave a
      // stray name behind).
      if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
        if (errno != EEXIST) return Status::IOError("cannot create " + path_ + ": " + std::strerror(errno));
        for (int attempt = 0;; ++attempt) {
          std::string name = name_ + ".chunkstore-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(attempt);
          if (::linkat(AT_FDCWD, proc.c_str(), dir_fd_, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
            tmp_ = std::move(name);
            break;
          }
          if (errno != EEXIST || attempt > 100)
            return Status::IOError("cannot create a file beside " + path_ + ": " + std::strerror(errno));
        }
      }
    }
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return Status::IOError("cannot write " + path_ + ": " + std::strerror(errno));
    if (!tmp_.empty()) {
      if (::renameat(dir_fd_, tmp_.c_str(), dir_fd_, name_.c_str()) != 0)
        return Status::IOError("cannot write " + path_ + ": " + std::strerror(errno));
      tmp_.clear();
    }
    // The new name lasts a power loss only once its directory is synced.
    ::fsync(dir_fd_);
    return Status::OK();
  }

 private:
  std::string path_, dir_, name_, tmp_;
  int fd_ = STDOUT_FILENO;
  int dir_fd_ = -1;
  bool special_ = false;
};

// Standard input straight from its descriptor: a read error (EIO, or
// EISDIR when stdin is a directory) fails the publish instead of ending
// the input early, as an istream would.
Result<size_t> ReadStdin(void* buf, size_t n) {
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, buf, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno == EINTR && g_interrupted.load()) return Status::IOError("interrupted");
    if (errno != EINTR) return Status::IOError(std::string("cannot read standard input: ") + std::strerror(errno));
  }
}

struct Input {
  std::string path;  // "-" for stdin
  std::string name;
  bool tree = false;  // a directory, published as a tree
};

}  // namespace

std::string StoreDir(const Globals& g) {
  if (!g.store_dir.empty()) return g.store_dir;
  if (const char* d = std::getenv("CHUNKSTORE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/chunkstore";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/chunkstore";
  return ".chunkstore";
}

int FailOpen(const Status& s) {
  return Fail(s, s.IsNotFound()           ? kNotFound
                 : s.IsCorruption()       ? kIntegrity
                 : s.IsPermissionDenied() ? kDenied
                                          : kFailure);
}

Result<std::string> StoreSecret(const Globals& g) {
  std::string path = g.secret_file;
  if (path.empty())
    if (const char* p = std::getenv("CHUNKSTORE_SECRET_FILE"); p && *p) path = p;
  if (path.empty()) return std::string();
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::IOError("cannot read the secret file " + path);
  std::string secret((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return Status::InvalidArgument("the secret file " + path + " is empty");
  return secret;
}

Result<std::string> ReadTokenFile(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  if (!f) return Status::IOError("cannot read the token file " + file);
  std::string token(std::istreambuf_iterator<char>(f), {});
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.size() < 16) return Status::InvalidArgument("the token in " + file + " is shorter than 16 bytes");
  if (token.find_first_of("\r\n") != std::string::npos)
    return Status::InvalidArgument("the token in " + file + " is more than one line");
  return token;
}

Result<std::unique_ptr<chunkstore::Store>> OpenStore(const Globals& g, Access access, bool rebuild, bool refresh) {
  chunkstore::Options o;
  o.refresh_on_open = refresh;
  o.create_if_missing = access == Access::kCreate;
  o.rebuild_index = rebuild;
  if (g.cache_bytes) o.cache_bytes = g.cache_bytes;
  o.cache_dir = g.cache_dir;
  if (g.cache_size != UINT64_MAX) o.chunk_cache_bytes = g.cache_size;
  const std::string dir = StoreDir(g);
  // A store this process cannot write (read-only media, another user's
  // files) is still readable: opened read-only, the index is read as it
  // is and nothing is written. A change says plainly why it cannot be made.
  if (dir.rfind("s3://", 0) != 0 && ::access(dir.c_str(), W_OK) != 0 && (errno == EROFS || errno == EACCES)) {
    const bool media = errno == EROFS;
    const char* why = media ? "on a read-only file system" : "not writable by this user";
    if (access != Access::kRead || rebuild)
      return Status::IOError("the store " + dir + " is read-only (" + why + "): this command would change it");
    o.read_only = true;
    // Read-only media change for nobody; another user's store may be
    // changing while it is read, without the locks this user cannot take.
    if (!media && !g.quiet)
      std::cerr << "chunkstore: note: " << Printable(dir)
                << " is not writable by this user: its index is read as it is, without the store's locks "
                   "(changes being made meanwhile may not show)\n";
  }
  Result<std::string> secret = StoreSecret(g);
  if (!secret.ok()) return secret.status();
  o.secret = *secret;
  o.http_token = g.http_token;
  auto store = chunkstore::Store::Open(dir, o);
  // What the open noticed and mended is worth a line, but never stdout's;
  // a rebuild asked for says so itself.
  if (store.ok() && !g.quiet)
    for (const std::string& n : (*store)->notices())
      if (!rebuild || n.rfind("rebuilt the index", 0) != 0) std::cerr << "chunkstore: note: " << Printable(n) << "\n";
  return store;
}

void Print(const std::string& s) {
  errno = 0;
  std::cout << s << std::flush;
  CheckOutput();
}

int CmdInit(const Globals& g, const chunkstore::ChunkerParams& params, const std::string& compression,
            bool no_compression, uint32_t inline_max) {
  Status v = params.Validate();
  if (!v.ok()) return Fail(v, kUsage);
  chunkstore::Options o;
  o.chunking = params;
  if (no_compression && !compression.empty())
    return Fail(Status::InvalidArgument("--no-compression and --compression cannot both be given"), kUsage);
  if (no_compression) {
    o.compression = chunkstore::Compression::None();
  } else if (!compression.empty()) {
    Result<chunkstore::Compression> c = chunkstore::Compression::Parse(compression);
    if (!c.ok()) return Fail(c.status().WithContext("--compression"), kUsage);
    o.compression = *c;
  }
  o.inline_max = inline_max;
  if (inline_max > chunkstore::kInlineMaxLimit)
    return Fail(Status::InvalidArgument("--inline-max " + std::to_string(inline_max) +
                                        " is out of range: it must be 0 to " +
                                        std::to_string(chunkstore::kInlineMaxLimit)),
                kUsage);
  o.error_if_exists = true;
  Result<std::string> secret = StoreSecret(g);
  if (!secret.ok()) return Fail(secret.status(), kUsage);
  o.secret = *secret;
  auto store = chunkstore::Store::Open(StoreDir(g), o);
  if (!store.ok()) return FailOpen(store.status());
  const auto& c = (*store)->chunking();
  if (g.json) {
    Json j;
    j.BeginObject().Key("store").Str((*store)->dir()).Key("chunk_min").Num(c.min_size);
    j.Key("chunk_avg").Num(c.avg_size).Key("chunk_max").Num(c.max_size).Key("level").Int(c.level);
    j.Key("compression").Str((*store)->compression().ToString()).Key("inline_max").Num((*store)->inline_max()).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("created store " + (*store)->dir() + " (chunks " + std::to_string(c.min_size) + "/" +
          std::to_string(c.avg_size) + "/" + std::to_string(c.max_size) + ", level " +
          std::to_string(c.level) + ", compression " + (*store)->compression().ToString() +
          ", inline up to " + std::to_string((*store)->inline_max()) + " bytes)\n");
  }
  return kOk;
}

namespace {
int PublishInto(const Globals& g, const PublishArgs& a);
}  // namespace

int CmdPublish(const Globals& g, const PublishArgs& a) {
  // A publish that creates its store (a first publish, or a mistyped
  // --store) and then fails leaves no empty store behind: one that still
  // holds no change, and that nobody else holds, is removed again.
  const std::string dir = StoreDir(g);
  struct stat st;
  const bool fresh = dir.rfind("s3://", 0) != 0 && ::lstat(dir.c_str(), &st) != 0 && errno == ENOENT;
  const int rc = PublishInto(g, a);
  if (rc != kOk && fresh && ::lstat(dir.c_str(), &st) == 0) {
    Status removed = chunkstore::Store::RemoveUnused(dir);
    if (removed.ok() && !g.quiet)
      std::cerr << "chunkstore: removed the store " << Printable(dir) << " this publish had created\n";
  }
  return rc;
}

namespace {
int PublishInto(const Globals& g, const PublishArgs& a) {
  std::vector<Input> inputs;
  // The total size only sizes the progress bar; without one, skip a stat
  // per file (thousands of small files).
  const ProgressMode progress_mode = WantProgress(g.progress, g.quiet);
  const bool may_show_progress = progress_mode != ProgressMode::kNone;
  uint64_t total = 0;
  // What a walk passes over: with --name-prefix, symlinks (never followed
  // out of the tree); always FIFOs, sockets and devices (never opened as
  // files).
  struct Skipped {
    std::string path, kind;
  };
  std::vector<Skipped> skipped;
  for (const std::string& in : a.inputs) {
    std::error_code ec;
    if (in != "-" && fs::is_directory(in, ec)) {
      if (a.name_prefix.empty()) {
        inputs.push_back({in, a.name, true});
        continue;
      }
      if (!a.name.empty())
        return Fail(Status::InvalidArgument("--name and --name-prefix cannot both be given"), kUsage);
      std::vector<std::string> files;
      fs::recursive_directory_iterator it(in, ec), end;
      if (ec) return Fail(Status::IOError("cannot read directory " + in + ": " + ec.message()), kFailure);
      for (; it != end; it.increment(ec)) {
        if (ec) return Fail(Status::IOError("cannot read directory " + in + ": " + ec.message()), kFailure);
        const fs::file_status st = it->symlink_status(ec);
        if (ec) return Fail(Status::IOError("cannot stat " + it->path().string() + ": " + ec.message()), kFailure);
        if (fs::is_regular_file(st)) {
          files.push_back(it->path().string());
        } else if (!fs::is_directory(st)) {
          skipped.push_back({it->path().string(), fs::is_symlink(st)  ? "symlink"
                                                  : fs::is_fifo(st)   ? "fifo"
                                                  : fs::is_socket(st) ? "socket"
                                                                      : "device"});
        }
      }
      std::sort(files.begin(), files.end());
      if (files.empty())
        return Fail(Status::InvalidArgument(in + " has no regular files to publish"), kFailure);
      for (const std::string& f : files) {
        const std::string name = a.name_prefix + (a.name_prefix.back() == '/' ? "" : "/") +
                                 fs::path(f).lexically_relative(in).generic_string();
        inputs.push_back({f, name});
        if (may_show_progress) total += fs::file_size(f, ec);
      }
      continue;
    }
    if (in != "-" && may_show_progress) total += fs::file_size(in, ec);
    inputs.push_back({in, a.name});
  }
  if (!a.name.empty() && inputs.size() != 1)
    return Fail(Status::InvalidArgument("--name needs exactly one input file or directory"), kUsage);
  for (const Input& in : inputs) {
    if (in.name.empty()) continue;
    Status v = chunkstore::ValidateName(in.name);
    if (!v.ok()) return Fail(v.WithContext("cannot name " + in.path), kUsage);
  }
  // A mistyped input fails before the store is opened, so it cannot leave
  // a new, empty store behind (the open creates a missing one).
  for (const Input& in : inputs) {
    struct stat st;
    if (in.path != "-" && ::stat(in.path.c_str(), &st) != 0) {
      const int err = errno;
      return Fail(err == ENOENT ? Status::NotFound("no such file: " + in.path)
                                : Status::IOError("cannot open " + in.path + ": " + std::strerror(err)),
                  kFailure);
    }
  }
  InterruptGuard guard;
  OPEN_OR_FAIL(store, Access::kCreate);
  auto batch = store.NewBatch();
  batch->SetCancel(&g_interrupted);
  // What an interrupted publish says, once its batch (and what it wrote)
  // is gone: 128 + SIGINT, as a shell reports it.
  auto interrupted = [&] {
    batch.reset();
    std::cerr << "chunkstore: interrupted: nothing was published\n";
    return 130;
  };
  const bool unknown_total = std::any_of(inputs.begin(), inputs.end(), [](const Input& i) { return i.path == "-" || i.tree; });
  std::unique_ptr<Progress> progress = MakeProgress(progress_mode, unknown_total ? 0 : total, 8u << 20, "publish");
  uint64_t bytes_done = 0;
  if (progress)
    batch->SetProgress([p = progress.get(), &bytes_done](uint64_t done) {
      bytes_done = done;
      p->Update(done);
    });
  std::vector<std::string> paths;
  for (const Input& in : inputs)
    if (in.path != "-" && !in.tree) paths.push_back(in.path);
  batch->Prefetch(std::move(paths));
  std::vector<std::optional<chunkstore::TreePublishResult>> trees(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    Status failed;
    if (in.tree) {
      chunkstore::TreePublishOptions o;
      o.force_hash = a.force_hash;
      o.skipped = [&](const std::string& path, const std::string& why) { skipped.push_back({path, why}); };
      auto r = batch->AddTree(in.path, in.name, o);
      if (r.ok()) trees[i] = std::move(*r);
      else failed = r.status();
    } else {
      auto r = in.path == "-" ? batch->AddPull(ReadStdin, in.name) : batch->AddFile(in.path, in.name);
      if (!r.ok()) failed = r.status();
    }
    if (!failed.ok()) {
      progress.reset();
      if (g_interrupted.load()) return interrupted();
      // Problems with an input are failures (1); damaged store data is 4.
      return Fail(failed, failed.IsCorruption() ? kIntegrity : failed.IsInvalidArgument() && in.tree ? kUsage : kFailure);
    }
  }
  auto done = batch->Commit();
  if (progress && done.ok()) progress->Done(bytes_done);
  progress.reset();
  if (!done.ok() && g_interrupted.load()) return interrupted();
  if (!done.ok()) return Fail(done.status(), kFailure);
  std::sort(skipped.begin(), skipped.end(), [](const Skipped& x, const Skipped& y) { return x.path < y.path; });
  if (!g.quiet)
    for (const Skipped& s : skipped)
      std::cerr << "chunkstore: skipped " << s.kind << " " << Printable(s.path)
                << (s.kind == "symlink" ? " (only regular files are published with --name-prefix)"
                    : s.kind == "vanished" ? " (removed while it was read)"
                    : s.kind == "the store itself" ? ""
                                           : " (only files, directories and symlinks are published)")
                << "\n";
  if (g.json) {
    Json j;
    j.BeginObject().Key("published").BeginArray();
    for (size_t i = 0; i < done->size(); ++i) {
      const auto& r = (*done)[i];
      j.BeginObject().Key("id").Str(r.id).Key("input").Str(inputs[i].path).Key("size").Num(r.size);
      j.Key("new_bytes").Num(r.new_bytes).Key("chunks").Num(r.chunks).Key("reused_chunks").Num(r.reused_chunks);
      if (trees[i]) {
        const auto& t = *trees[i];
        j.Key("tree").Bool(true).Key("files").Num(t.files).Key("directories").Num(t.directories);
        j.Key("symlinks").Num(t.symlinks).Key("bytes").Num(t.bytes).Key("files_read").Num(t.files_read);
        j.Key("files_cached").Num(t.files_cached);
      }
      if (!r.name.empty()) j.Key("name").Str(r.name).Key("version").Int(r.version);
      j.EndObject();
    }
    j.EndArray();
    if (!skipped.empty()) {
      j.Key("skipped").BeginArray();
      for (const Skipped& s : skipped) j.BeginObject().Key("path").Str(s.path).Key("kind").Str(s.kind).EndObject();
      j.EndArray();
    }
    j.EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    std::string out;
    for (size_t i = 0; i < done->size(); ++i) out += (*done)[i].id + "  " + Printable(inputs[i].path) + "\n";
    Print(out);
  }
  return kOk;
}
}  // namespace

namespace {

// Parses a byte count: digits only, at most 2^63 - 1.
Result<int64_t> ParseCount(const std::string& flag, const std::string& text) {
  if (!text.empty() && text[0] == '-') return Status::InvalidArgument(flag + " cannot be negative");
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return Status::InvalidArgument(flag + " takes a number of bytes, not '" + text + "'");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
    return Status::InvalidArgument(flag + " " + text + " is too large");
  return static_cast<int64_t>(v);
}

}  // namespace

int CmdCat(const Globals& g, const std::string& ref, const std::string& offset_text,
           const std::string& length_text, const std::string& out_path, bool no_sparse) {
  auto offset = ParseCount("--offset", offset_text.empty() ? "0" : offset_text);
  if (!offset.ok()) return Fail(offset.status(), kUsage);
  Result<int64_t> length = int64_t{-1};
  if (!length_text.empty()) length = ParseCount("--length", length_text);
  if (!length.ok()) return Fail(length.status(), kUsage);
  OPEN_OR_FAIL(store, Access::kRead);
  auto reader = store.OpenReader(ref);
  if (!reader.ok()) return Fail(reader.status());
  chunkstore::Reader& r = **reader;
  const uint64_t start = std::min<uint64_t>(static_cast<uint64_t>(*offset), r.size());
  uint64_t remaining = r.size() - start;
  if (*length >= 0) remaining = std::min<uint64_t>(remaining, static_cast<uint64_t>(*length));
  Status s = r.Seek(start);
  if (!s.ok()) return Fail(s);
  r.LimitReadAhead(start + remaining);  // a range verifies no chunk past its end

  OutputFile out;
  if (!out_path.empty() && out_path != "-") {
    Status o = out.Open(out_path, store.dir());
    if (!o.ok()) return Fail(o, o.IsInvalidArgument() ? kUsage : kFailure);
  }
  // Zero blocks become holes in a regular file; a file written in full
  // gets its blocks reserved up front instead.
  chunkstore::internal::SparseWriter writer(out.fd(), !no_sparse && !out.special());
  if (!out.special() && !writer.sparse()) ReserveOutput(out.fd(), remaining);
  auto write_failed = [](int err) -> int {
    if (err == EPIPE) return kFailure;  // the reader went away: nothing to say
    return Fail(Status::IOError(std::string("cannot write output: ") + std::strerror(err)), kFailure);
  };
  // A progress line on a terminal's stderr for reads over 8 MiB (as
  // publish), unless the bytes themselves go to a terminal (the line
  // would land among them).
  const uint64_t total = remaining;
  const bool to_terminal = out_path.empty() || out_path == "-" ? ::isatty(STDOUT_FILENO) : ::isatty(out.fd());
  ProgressMode mode = WantProgress(g.progress, g.quiet);
  if (mode == ProgressMode::kTerminal && to_terminal) mode = ProgressMode::kNone;
  std::unique_ptr<Progress> progress = MakeProgress(mode, std::max<uint64_t>(total, 1), 8u << 20, "cat");
  // Verified chunk bytes go to the output as they are, without a copy.
  while (remaining > 0) {
    auto view = r.ReadView(static_cast<size_t>(std::min<uint64_t>(remaining, SIZE_MAX)));
    if (!view.ok()) {
      progress.reset();  // the message gets a line of its own
      return Fail(view.status());
    }
    const size_t n = view->size;
    if (n == 0) break;
    if (!writer.Write(view->data, n)) {
      const int err = errno;
      progress.reset();
      return write_failed(err);
    }
    remaining -= n;
    if (progress) progress->Update(total - remaining);
  }
  if (progress) progress->Done(total - remaining);
  progress.reset();  // the line is cleared before any message
  if (!writer.Finish()) return write_failed(errno);
  Status c = out.Commit();
  if (!c.ok()) return Fail(c, kFailure);
  return kOk;
}

}  // namespace cli

// The chunkstore subcommands over the library (see main.cc for parsing).
#include "commands.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common.h"

namespace cli {

using chunkstore::Result;
using chunkstore::Status;
namespace fs = std::filesystem;

namespace {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

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

// A one-line progress bar on a terminal's stderr.
class Progress {
 public:
  Progress(uint64_t total) : total_(total), start_(Clock::now()) {}
  void Update(uint64_t done) {
    const auto now = Clock::now();
    if (now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
    std::string line(1, '\r');
    if (total_) {
      const int width = 24;
      const int fill = static_cast<int>(std::min<uint64_t>(done, total_) * width / total_);
      line.append(1, '[').append(fill, '#').append(width - fill, '.').append("] ");
      line.append(HumanSize(done)).append(" / ").append(HumanSize(total_));
    } else {
      line.append(HumanSize(done));
    }
    line += "  " + HumanSize(static_cast<uint64_t>(rate)) + "/s";
    if (total_ && rate > 0 && done < total_)
      line += "  ETA " + std::to_string(static_cast<int>((total_ - done) / rate) + 1) + "s";
    std::fprintf(stderr, "%-78s", line.c_str());
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r%78s\r", "");
  }

 private:
  using Clock = std::chrono::steady_clock;
  uint64_t total_;
  Clock::time_point start_, last_{};
  bool shown_ = false;
};

struct Input {
  std::string path;  // "-" for stdin
  std::string name;
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

Result<std::unique_ptr<chunkstore::Store>> OpenStore(const Globals& g, bool create, bool rebuild) {
  chunkstore::Options o;
  o.create_if_missing = create;
  o.rebuild_index = rebuild;
  Result<std::string> secret = StoreSecret(g);
  if (!secret.ok()) return secret.status();
  o.secret = *secret;
  auto store = chunkstore::Store::Open(StoreDir(g), o);
  // What the open noticed and mended is worth a line, but never stdout's;
  // a rebuild asked for says so itself.
  if (store.ok() && !g.quiet)
    for (const std::string& n : (*store)->notices())
      if (!rebuild || n.rfind("rebuilt the index", 0) != 0) std::cerr << "chunkstore: note: " << n << "\n";
  return store;
}

void Print(const std::string& s) { std::cout << s << std::flush; }

int CmdInit(const Globals& g, const chunkstore::ChunkerParams& params, bool no_compression,
            uint32_t inline_max) {
  Status v = params.Validate();
  if (!v.ok()) return Fail(v, kUsage);
  chunkstore::Options o;
  o.chunking = params;
  o.compression = !no_compression;
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
    j.Key("compression").Bool(!no_compression).Key("inline_max").Num((*store)->inline_max()).EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    Print("created store " + (*store)->dir() + " (chunks " + std::to_string(c.min_size) + "/" +
          std::to_string(c.avg_size) + "/" + std::to_string(c.max_size) + ", level " +
          std::to_string(c.level) + ", compression " + (no_compression ? "off" : "on") +
          ", inline up to " + std::to_string((*store)->inline_max()) + " bytes)\n");
  }
  return kOk;
}

int CmdPublish(const Globals& g, const PublishArgs& a) {
  std::vector<Input> inputs;
  // The total size only sizes the progress bar; without one, skip a stat
  // per file (thousands of small files).
  const bool may_show_progress = !g.quiet && ::isatty(STDERR_FILENO);
  uint64_t total = 0;
  for (const std::string& in : a.inputs) {
    std::error_code ec;
    if (in != "-" && fs::is_directory(in, ec)) {
      std::vector<std::string> files;
      fs::recursive_directory_iterator it(in, ec), end;
      if (ec) return Fail(Status::IOError("cannot read directory " + in + ": " + ec.message()), kFailure);
      for (; it != end; it.increment(ec)) {
        if (ec) return Fail(Status::IOError("cannot read directory " + in + ": " + ec.message()), kFailure);
        if (it->is_regular_file(ec)) files.push_back(it->path().string());
      }
      std::sort(files.begin(), files.end());
      if (files.empty())
        return Fail(Status::InvalidArgument(in + " has no regular files to publish"), kFailure);
      for (const std::string& f : files) {
        std::string name;
        if (!a.name_prefix.empty())
          name = a.name_prefix + (a.name_prefix.back() == '/' ? "" : "/") +
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
    return Fail(Status::InvalidArgument("--name needs exactly one input file"), kUsage);
  for (const Input& in : inputs) {
    if (in.name.empty()) continue;
    Status v = chunkstore::ValidateName(in.name);
    if (!v.ok()) return Fail(v.WithContext("cannot name " + in.path), kUsage);
  }
  OPEN_OR_FAIL(store, true);
  auto batch = store.NewBatch();
  std::unique_ptr<Progress> progress;
  const bool has_stdin = std::any_of(inputs.begin(), inputs.end(), [](const Input& i) { return i.path == "-"; });
  if (may_show_progress && (total > (8u << 20) || has_stdin)) {
    progress = std::make_unique<Progress>(has_stdin ? 0 : total);
    batch->SetProgress([p = progress.get()](uint64_t done) { p->Update(done); });
  }
  std::vector<std::string> paths;
  for (const Input& in : inputs)
    if (in.path != "-") paths.push_back(in.path);
  batch->Prefetch(std::move(paths));
  for (const Input& in : inputs) {
    auto r = in.path == "-" ? batch->AddStream(std::cin, in.name) : batch->AddFile(in.path, in.name);
    if (!r.ok()) {
      progress.reset();
      // Problems with an input are failures (1); damaged store data is 4.
      return Fail(r.status(), r.status().IsCorruption() ? kIntegrity : kFailure);
    }
  }
  auto done = batch->Commit();
  progress.reset();
  if (!done.ok()) return Fail(done.status(), kFailure);
  if (g.json) {
    Json j;
    j.BeginObject().Key("published").BeginArray();
    for (size_t i = 0; i < done->size(); ++i) {
      const auto& r = (*done)[i];
      j.BeginObject().Key("id").Str(r.id).Key("input").Str(inputs[i].path).Key("size").Num(r.size);
      j.Key("new_bytes").Num(r.new_bytes).Key("chunks").Num(r.chunks).Key("reused_chunks").Num(r.reused_chunks);
      if (!r.name.empty()) j.Key("name").Str(r.name).Key("version").Int(r.version);
      j.EndObject();
    }
    j.EndArray().EndObject();
    Print(j.str() + "\n");
  } else if (!g.quiet) {
    std::string out;
    for (size_t i = 0; i < done->size(); ++i) out += (*done)[i].id + "  " + inputs[i].path + "\n";
    Print(out);
  }
  return kOk;
}

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
           const std::string& length_text, const std::string& out_path) {
  auto offset = ParseCount("--offset", offset_text.empty() ? "0" : offset_text);
  if (!offset.ok()) return Fail(offset.status(), kUsage);
  Result<int64_t> length = int64_t{-1};
  if (!length_text.empty()) length = ParseCount("--length", length_text);
  if (!length.ok()) return Fail(length.status(), kUsage);
  OPEN_OR_FAIL(store, false);
  auto reader = store.OpenReader(ref);
  if (!reader.ok()) return Fail(reader.status());
  chunkstore::Reader& r = **reader;
  const uint64_t start = std::min<uint64_t>(static_cast<uint64_t>(*offset), r.size());
  uint64_t remaining = r.size() - start;
  if (*length >= 0) remaining = std::min<uint64_t>(remaining, static_cast<uint64_t>(*length));
  Status s = r.Seek(start);
  if (!s.ok()) return Fail(s);
  r.LimitReadAhead(start + remaining);  // a range verifies no chunk past its end

  int fd = STDOUT_FILENO;
  std::string tmp;
  struct stat out_st;
  const bool special = !out_path.empty() && out_path != "-" && ::stat(out_path.c_str(), &out_st) == 0 &&
                       !S_ISREG(out_st.st_mode);
  if (special) {
    // A device or pipe (-o /dev/null): nothing to replace atomically.
    fd = ::open(out_path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Fail(Status::IOError("cannot open " + out_path + ": " + std::strerror(errno)), kFailure);
  } else if (!out_path.empty() && out_path != "-") {
    // Written beside the target and renamed at the end, so a failed read
    // never leaves a partial file under the requested name.
    tmp = out_path + ".chunkstore-tmp-XXXXXX";
    fd = ::mkstemp(tmp.data());
    if (fd < 0) return Fail(Status::IOError("cannot create " + tmp + ": " + std::strerror(errno)), kFailure);
    const mode_t mask = ::umask(0);  // mkstemp makes 0600; give the usual mode
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
  }
  auto discard = [&] {
    if (!tmp.empty()) {
      ::close(fd);
      ::unlink(tmp.c_str());
    }
  };
  if (!special) ReserveOutput(fd, remaining);
  // Verified chunk bytes go to the output as they are, without a copy.
  while (remaining > 0) {
    auto view = r.ReadView(static_cast<size_t>(std::min<uint64_t>(remaining, SIZE_MAX)));
    if (!view.ok()) {
      discard();
      return Fail(view.status());
    }
    const size_t n = view->size;
    if (n == 0) break;
    if (!WriteAll(fd, view->data, n)) {
      const int err = errno;
      discard();
      if (err == EPIPE) return kFailure;  // the reader went away: nothing to say
      return Fail(Status::IOError(std::string("cannot write output: ") + std::strerror(err)), kFailure);
    }
    remaining -= n;
  }
  if (special) ::close(fd);
  if (!tmp.empty()) {
    if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), out_path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return Fail(Status::IOError("cannot write " + out_path + ": " + std::strerror(err)), kFailure);
    }
  }
  return kOk;
}

}  // namespace cli

// The chunkstore command-line tool.
//
// Exit codes: 0 success, 1 failure, 2 usage error (bad flags, malformed
// refs or parameters), 3 not found, 4 integrity failure (corruption).
// Every error is one line on stderr that starts with "chunkstore: ".
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "chunkstore/store.h"

namespace {

using chunkstore::Code;
using chunkstore::Status;

enum Exit { kOk = 0, kFailure = 1, kUsage = 2, kNotFound = 3, kIntegrity = 4 };

int ExitFor(const Status& s) {
  switch (s.code()) {
    case Code::kOk: return kOk;
    case Code::kNotFound: return kNotFound;
    case Code::kCorruption: return kIntegrity;
    case Code::kInvalidArgument: return kUsage;
    default: return kFailure;
  }
}

int Fail(const Status& s, int code) {
  std::cerr << "chunkstore: " << s.message() << "\n";
  return code;
}
int Fail(const Status& s) { return Fail(s, ExitFor(s)); }

std::string DefaultStoreDir() {
  if (const char* d = std::getenv("CHUNKSTORE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/chunkstore";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/chunkstore";
  return ".chunkstore";
}

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

struct Globals {
  std::string store_dir;
  bool quiet = false;
};

chunkstore::Result<std::unique_ptr<chunkstore::Store>> OpenStore(const Globals& g, bool create) {
  chunkstore::Options o;
  o.create_if_missing = create;
  const std::string dir = g.store_dir.empty() ? DefaultStoreDir() : g.store_dir;
  return chunkstore::Store::Open(dir, o);
}

// Store-opening failures are failures (1), not usage errors, except that a
// missing store is "not found" (3).
int FailOpen(const Status& s) { return Fail(s, s.IsNotFound() ? kNotFound : s.IsCorruption() ? kIntegrity : kFailure); }

int CmdPublish(const Globals& g, const std::vector<std::string>& inputs, const std::string& name) {
  if (!name.empty() && inputs.size() != 1)
    return Fail(Status::InvalidArgument("--name needs exactly one input"), kUsage);
  if (!name.empty()) {
    Status v = chunkstore::ValidateName(name);
    if (!v.ok()) return Fail(v, kUsage);
  }
  auto store = OpenStore(g, true);
  if (!store.ok()) return FailOpen(store.status());
  auto batch = (*store)->NewBatch();
  std::vector<std::pair<std::string, std::string>> lines;
  for (const std::string& in : inputs) {
    auto r = in == "-" ? batch->AddStream(std::cin, name) : batch->AddFile(in, name);
    if (!r.ok()) {
      // Problems with an input are failures (1); damaged store data is 4.
      return Fail(r.status(), r.status().IsCorruption() ? kIntegrity : kFailure);
    }
    lines.emplace_back(r->id, in);
  }
  auto committed = batch->Commit();
  if (!committed.ok()) return Fail(committed.status(), kFailure);
  if (!g.quiet)
    for (const auto& [id, in] : lines) std::cout << id << "  " << in << "\n";
  return kOk;
}

// Parses a byte count: digits only, at most 2^63 - 1.
chunkstore::Result<int64_t> ParseCount(const std::string& flag, const std::string& text) {
  if (!text.empty() && text[0] == '-')
    return Status::InvalidArgument(flag + " cannot be negative");
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return Status::InvalidArgument(flag + " takes a number of bytes, not '" + text + "'");
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
    return Status::InvalidArgument(flag + " " + text + " is too large");
  return static_cast<int64_t>(v);
}

int CatRange(const Globals& g, const std::string& ref, int64_t offset, int64_t length,
             const std::string& out_path);

int CmdCat(const Globals& g, const std::string& ref, const std::string& offset_text,
           const std::string& length_text, const std::string& out_path) {
  auto offset = ParseCount("--offset", offset_text.empty() ? "0" : offset_text);
  if (!offset.ok()) return Fail(offset.status(), kUsage);
  chunkstore::Result<int64_t> length = int64_t{-1};
  if (!length_text.empty()) length = ParseCount("--length", length_text);
  if (!length.ok()) return Fail(length.status(), kUsage);
  return CatRange(g, ref, *offset, *length, out_path);
}

int CatRange(const Globals& g, const std::string& ref, int64_t offset, int64_t length,
             const std::string& out_path) {
  auto store = OpenStore(g, false);
  if (!store.ok()) return FailOpen(store.status());
  auto reader = (*store)->OpenReader(ref);
  if (!reader.ok()) return Fail(reader.status());
  chunkstore::Reader& r = **reader;
  const uint64_t start = std::min<uint64_t>(static_cast<uint64_t>(offset), r.size());
  uint64_t remaining = r.size() - start;
  if (length >= 0) remaining = std::min<uint64_t>(remaining, static_cast<uint64_t>(length));
  Status s = r.Seek(start);
  if (!s.ok()) return Fail(s);

  int fd = STDOUT_FILENO;
  std::string tmp;
  if (!out_path.empty() && out_path != "-") {
    // Written beside the target and renamed at the end, so a failed read
    // never leaves a partial file under the requested name.
    tmp = out_path + ".chunkstore-tmp-XXXXXX";
    fd = ::mkstemp(tmp.data());
    if (fd < 0) return Fail(Status::IOError("cannot create " + tmp + ": " + std::strerror(errno)), kFailure);
  }
  auto cleanup = [&] {
    if (!tmp.empty()) {
      ::close(fd);
      ::unlink(tmp.c_str());
    }
  };
  std::vector<char> buf(1 << 20);
  while (remaining > 0) {
    auto n = r.Read(buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), remaining)));
    if (!n.ok()) {
      cleanup();
      return Fail(n.status());
    }
    if (*n == 0) break;
    if (!WriteAll(fd, buf.data(), *n)) {
      const int err = errno;
      cleanup();
      if (err == EPIPE) return kFailure;
      return Fail(Status::IOError(std::string("cannot write output: ") + std::strerror(err)), kFailure);
    }
    remaining -= *n;
  }
  if (!tmp.empty()) {
    if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), out_path.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp.c_str());
      return Fail(Status::IOError("cannot write " + out_path + ": " + std::strerror(err)), kFailure);
    }
  }
  return kOk;
}

int CmdChunks(const std::string& path, const chunkstore::ChunkerParams& params) {
  Status v = params.Validate();
  if (!v.ok()) return Fail(v, kUsage);
  auto chunks = chunkstore::ChunkFile(path, params);
  if (!chunks.ok()) return Fail(chunks.status(), chunks.status().IsCorruption() ? kIntegrity : kFailure);
  std::string out;
  for (const auto& c : *chunks)
    out += std::to_string(c.offset) + " " + std::to_string(c.length) + " " + c.id + "\n";
  std::cout << out;
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "chunkstore: a content-addressed, chunked object store.\n\n"
      "Exit codes: 0 ok, 1 failure, 2 usage error, 3 not found, 4 integrity failure.\n"
      "Store location: --store, else $CHUNKSTORE_DIR, else $XDG_DATA_HOME/chunkstore\n"
      "(~/.local/share/chunkstore)."};
  app.require_subcommand(1);
  app.get_formatter()->column_width(30);
  Globals g;
  app.add_option("--store", g.store_dir, "Store directory")->option_text("DIR");
  app.add_flag("-q,--quiet", g.quiet, "Print nothing but errors");
  app.set_version_flag("--version", std::string("chunkstore ") + "0.1.0");

  std::vector<std::string> inputs;
  std::string name;
  auto* publish = app.add_subcommand("publish", "Store files (or - for stdin); print their ids");
  publish->add_option("inputs", inputs, "Files to publish, - for stdin")->required()->option_text("PATH...");
  publish->add_option("--name", name, "Catalog name for the (single) input")->option_text("NAME");

  std::string ref, out_path, offset, length;
  auto* cat = app.add_subcommand("cat", "Write an object's verified bytes to stdout");
  cat->add_option("ref", ref, "Object id, id prefix, NAME, NAME@N or NAME@latest")->required();
  cat->add_option("--offset", offset, "First byte to write (default 0)")->option_text("N");
  cat->add_option("--length", length, "Bytes to write (default: to the end)")->option_text("N");
  cat->add_option("-o,--output", out_path, "Write to FILE (atomically) instead of stdout")->option_text("FILE");

  std::string chunk_path;
  chunkstore::ChunkerParams params;
  auto* chunks = app.add_subcommand("chunks", "Print a file's FastCDC chunks: offset length sha256");
  chunks->add_option("file", chunk_path, "File to cut, - for stdin")->required();
  chunks->add_option("--min", params.min_size, "Minimum chunk size (default 262144)")->option_text("N");
  chunks->add_option("--avg", params.avg_size, "Average chunk size (default 1048576)")->option_text("N");
  chunks->add_option("--max", params.max_size, "Maximum chunk size (default 4194304)")->option_text("N");
  chunks->add_option("--level", params.level, "Normalization level 0-3 (default 1)")->option_text("L");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "chunkstore: " << e.what() << "\n(run 'chunkstore --help' for usage)\n";
    return kUsage;
  }
  if (*publish) return CmdPublish(g, inputs, name);
  if (*cat) return CmdCat(g, ref, offset, length, out_path);
  if (*chunks) return CmdChunks(chunk_path, params);
  return kUsage;
}

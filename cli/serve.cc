// SPDX-License-Identifier: Apache-2.0
// `chunkstore serve`: an HTTP/1.1 server over a store (libmicrohttpd).
//
// Reads: GET and HEAD of /objects/sha256:<hex> (immutable, cached for a
// year) and /names/<ref> (a name, NAME@N, TREE:PATH: resolved on every
// request), with single, open, suffix and multiple ranges, If-None-Match,
// If-Range, an ETag and a Repr-Digest; GET /names?prefix= lists names as
// JSON. Every byte sent was verified first: the body is streamed from a
// verified reader, and damage found after the headers went out ends the
// connection (the client sees a short body, never other bytes), logged
// with the object and chunk. Writes (PUT /objects[?name=N], and POST
// /push: what `copy --to http://...` sends, checked whole before it is
// committed) only with --allow-write and the bearer token of
// --token-file. Under /blobs the store is a read-only S3 bucket
// (serve_blobs.h): what an http:// store on another machine reads.
//
// libmicrohttpd was chosen over cpp-httplib and Boost.Beast for what a
// server facing untrusted clients needs built in: a thread pool over
// epoll, limits on connections (in all and per address), on the memory a
// connection's headers may take and on idle time, and streaming bodies
// from a callback that can end a connection mid-body.
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "common.h"
#include "http_range.h"
#include "mhd_api.h"
#include "serve_blobs.h"
#include "terminal.h"

namespace cli {

using chunkstore::Status;

namespace {

// Set by CmdServe before anything below runs.
const MhdApi* g_mhd = nullptr;
const MhdApi& M() { return *g_mhd; }

constexpr const char* kOctets = "application/octet-stream";
constexpr uint64_t kShortRange = 4u << 20;  // bytes; a range this short is read at random (Body)

std::string Base64(const uint8_t* p, size_t n) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{p[i]} << 16) | (i + 1 < n ? uint32_t{p[i + 1]} << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += i + 1 < n ? t[(v >> 6) & 63] : '=';
    out += i + 2 < n ? t[v & 63] : '=';
  }
  return out;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

// Verified readers of recently served objects, kept open for the next
// request: opening one looks up every chunk of its object. Each remembers
// when its object was last found in the index, so that a request by id
// within kRecheck of that needs no index query at all: at thousands of
// small range requests a second, the query (and the index lock every
// worker thread would queue on) cost more than the rest of the request.
// An object removed from the store (rm, then gc) stops being served by
// id within kRecheck; an id is immutable, so nothing else can go stale.
class ReaderPool {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kRecheck = std::chrono::seconds(1);

  struct Entry {
    std::unique_ptr<chunkstore::Reader> reader;
    Clock::time_point confirmed;  // when its object was last found in the index
  };

  explicit ReaderPool(chunkstore::Store& store) : store_(store) {}

  // A pooled reader of id whose object was found in the index less than
  // kRecheck ago, or an empty entry.
  Entry TakeConfirmed(const std::string& id) {
    std::lock_guard<std::mutex> l(mu_);
    return TakeLocked(id, Clock::now() - kRecheck);
  }

  // A reader of id, which the caller has just found in the index.
  chunkstore::Result<Entry> Take(const std::string& id) {
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard<std::mutex> l(mu_);
      Entry e = TakeLocked(id, Clock::time_point::min());
      if (e.reader) {
        e.confirmed = now;
        return e;
      }
    }
    auto r = store_.OpenReader(id);
    if (!r.ok()) return r.status();
    return Entry{std::move(*r), now};
  }

  void Give(Entry e) {
    std::lock_guard<std::mutex> l(mu_);
    if (count_ >= kMax) free_.clear(), count_ = 0;  // crude, but bounded
    free_[e.reader->id()].push_back(std::move(e));
    ++count_;
  }

 private:
  // A pooled reader of id confirmed after `since`, one that has proven its
  // object first (a whole GET can then be sent from the cache), or an
  // empty entry.
  Entry TakeLocked(const std::string& id, Clock::time_point since) {
    auto it = free_.find(id);
    if (it == free_.end()) return {};
    std::vector<Entry>& v = it->second;
    size_t pick = v.size();
    for (size_t i = v.size(); i-- > 0;) {
      if (v[i].confirmed <= since) continue;
      if (pick == v.size()) pick = i;
      if (v[i].reader->IdProven()) {
        pick = i;
        break;
      }
    }
    if (pick == v.size()) return {};
    Entry e = std::move(v[pick]);
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(pick));
    --count_;
    return e;
  }

  static constexpr size_t kMax = 64;
  chunkstore::Store& store_;
  std::mutex mu_;
  std::map<std::string, std::vector<Entry>> free_;
  size_t count_ = 0;
};

struct Server;

// One request, from its first call to its completion.
struct Exchange {
  Server* server = nullptr;
  std::string method, url, peer;
  unsigned status = 0;
  uint64_t body_bytes = 0;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  bool answered = false;
  bool write_allowed = false;
  bool push = false;      // POST /push rather than PUT /objects
  FILE* spool = nullptr;  // a PUT's body, as it arrives
  bool spool_failed = false;
  bool too_large = false;   // the body passed --max-upload-mib: kept no further
  uint64_t spooled = 0;
  ~Exchange() {
    if (spool) std::fclose(spool);
  }
};

// What a response body is streamed from.
struct Body {
  Server* server = nullptr;
  Exchange* exchange = nullptr;  // for counting; outlives the body
  std::unique_ptr<chunkstore::Reader> reader;
  ReaderPool::Clock::time_point confirmed;  // when reader's object was last found in the index
  bool at_random = false;                    // the current part is read with ReadAt (Stream)
  std::vector<BodyPart> parts;
  size_t part = 0;
  uint64_t in_part = 0;  // bytes of the current part already sent
  bool failed = false;
};

struct Server {
  chunkstore::Store& store;
  std::unique_ptr<chunkstore::BlobStore> blobs;  // the store as a read-only bucket, for /blobs
  ReaderPool readers;
  bool allow_write = false;
  std::string token;
  uint64_t max_upload = 0;  // bytes; 0: no limit
  uint64_t whole_from_cache = 0;  // bytes; a proven object up to this size is sent from the chunk cache
  Server(chunkstore::Store& s) : store(s), readers(s) {}

  // Whether a whole read of object id may fill the cache now (HowToRead).
  bool MayFill(const std::string& id) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> l(fill_mu_);
    auto it = filled_.find(id);
    if (it != filled_.end() && now - it->second < std::chrono::minutes(1)) return false;
    if (filled_.size() >= 1024) filled_.clear();  // bounded; forgetting only allows a fill sooner
    filled_[id] = now;
    return true;
  }

  // Problems are written at once. Access lines wait in a buffer that the
  // main loop writes out every 100 ms (or sooner when it fills): one
  // write per request cost a tenth of a small range request's time.
  void Log(const std::string& line, bool now = true) {
    std::lock_guard<std::mutex> l(log_mu_);
    log_.append(line).push_back('\n');
    if (now || log_.size() >= kLogBuffer) WriteLogLocked();
  }
  void FlushLog() {
    std::lock_guard<std::mutex> l(log_mu_);
    WriteLogLocked();
  }

 private:
  static constexpr size_t kLogBuffer = 64 * 1024;
  void WriteLogLocked() {
    if (log_.empty()) return;
    std::cerr << log_ << std::flush;
    log_.clear();
  }
  std::mutex log_mu_;
  std::string log_;
  std::mutex fill_mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> filled_;
};

// The buffer libmicrohttpd fills from a streamed body: it allocates and
// zeroes this much for every response, which for a 32 KiB range cost more
// than the copy into it.
size_t BlockSize(uint64_t body_length) {
  return static_cast<size_t>(std::clamp<uint64_t>(body_length, 4096, 256 * 1024));
}

MHD_Result Queue(MHD_Connection* c, Exchange* x, unsigned status, MHD_Response* r, uint64_t buffered = 0) {
  x->status = status;
  x->body_bytes += buffered;
  x->answered = true;
  const MHD_Result ok = M().queue_response(c, status, r);
  M().destroy_response(r);
  return ok;
}

MHD_Result Text(MHD_Connection* c, Exchange* x, unsigned status, const std::string& body,
                const char* type = "text/plain; charset=utf-8") {
  MHD_Response* r = M().create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  M().add_response_header(r, "Content-Type", type);
  return Queue(c, x, status, r, body.size());
}

MHD_Result Failure(MHD_Connection* c, Exchange* x, const Status& s) {
  const unsigned code = s.IsNotFound()           ? MHD_HTTP_NOT_FOUND
                        : s.IsInvalidArgument()  ? MHD_HTTP_BAD_REQUEST
                        : s.IsPermissionDenied() ? MHD_HTTP_FORBIDDEN
                        : s.IsBusy()             ? MHD_HTTP_SERVICE_UNAVAILABLE
                                                 : MHD_HTTP_INTERNAL_SERVER_ERROR;
  if (s.IsCorruption()) x->server->Log("chunkstore: serve: damage: " + Printable(s.message()));
  return Text(c, x, code, std::string(CodeName(s.code())) + ": " + s.message() + "\n");
}

// How part p of a body is read. A short range (a header, one tensor) is
// read at random: its chunks go through the store's cache, where the next
// request for a nearby range finds them verified. A long one streams with
// read-ahead, past the cache, and the whole object streams so that its id
// is proven too. Once a reader has proven its object's id, its chunk list
// is known to give the object's bytes, and checking each chunk against its
// own id proves them again: a whole object that fits the cache twice over
// is then read at random when all its chunks are there (sent from verified
// memory: no pack read, no hashing), or streamed keeping the chunks it
// checks, to bring them in. That at most once a minute per object, so
// that objects taking turns in a cache too small for them do not evict
// each other on every request.
enum class How { kStream, kStreamKeeping, kAtRandom };

How HowToRead(Body& b, const BodyPart& p, bool whole) {
  if (!whole) return p.range.length() <= kShortRange ? How::kAtRandom : How::kStream;
  const uint64_t size = b.reader->size();
  if (!b.reader->IdProven() || size > b.server->whole_from_cache) return How::kStream;
  if (b.reader->Cached(0, size)) return How::kAtRandom;
  return b.server->MayFill(b.reader->id()) ? How::kStreamKeeping : How::kStream;
}

ssize_t Stream(void* cls, uint64_t, char* buf, size_t max) {
  auto* b = static_cast<Body*>(cls);
  size_t out = 0;
  while (out < max && b->part < b->parts.size()) {
    const BodyPart& p = b->parts[b->part];
    if (b->in_part < p.text.size()) {
      const size_t n = std::min<uint64_t>(max - out, p.text.size() - b->in_part);
      std::memcpy(buf + out, p.text.data() + b->in_part, n);
      out += n;
      b->in_part += n;
      continue;
    }
    const uint64_t data_done = b->in_part - p.text.size();
    if (!p.has_range || data_done == p.range.length()) {
      ++b->part;
      b->in_part = 0;
      continue;
    }
    const uint64_t size = b->reader->size();
    const bool whole = p.range.length() == size;
    if (data_done == 0) {
      const How how = HowToRead(*b, p, whole);
      b->at_random = how == How::kAtRandom;
      if (!b->at_random) {
        b->reader->KeepInCache(how == How::kStreamKeeping);
        Status s = b->reader->Seek(p.range.first);
        if (s.ok()) b->reader->LimitReadAhead(p.range.last + 1);
        if (!s.ok()) {
          b->failed = true;
          b->server->Log("chunkstore: serve: " + Printable(s.message()));
          return MHD_CONTENT_READER_END_WITH_ERROR;
        }
      }
    }
    const size_t want = std::min<uint64_t>(max - out, p.range.length() - data_done);
    chunkstore::Result<size_t> n = b->at_random ? b->reader->ReadAt(p.range.first + data_done, buf + out, want)
                                                : b->reader->Read(buf + out, want);
    if (!n.ok() || *n == 0) {
      // The headers are out: the only honest answer left is a short body.
      b->failed = true;
      b->server->Log("chunkstore: serve: stopped sending " + b->reader->id() + ": " +
                     Printable(n.ok() ? std::string("the object ended early") : n.status().message()));
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    out += *n;
    b->in_part += *n;
  }
  if (out == 0) return MHD_CONTENT_READER_END_OF_STREAM;
  b->exchange->body_bytes += out;
  return static_cast<ssize_t>(out);
}

void FreeBody(void* cls) {
  auto* b = static_cast<Body*>(cls);
  if (b->reader && !b->failed) b->server->readers.Give({std::move(b->reader), b->confirmed});
  delete b;
}

const char* Header(MHD_Connection* c, const char* name) { return M().lookup_connection_value(c, MHD_HEADER_KIND, name); }

// Whether an If-None-Match or If-Range value names etag (or "*").
bool Matches(const char* list, const std::string& etag) {
  if (!list) return false;
  std::string s(list);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.erase(0, 1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.pop_back();
    if (item.rfind("W/", 0) == 0) item = item.substr(2);
    if (item == "*" || item == etag) return true;
  }
  return false;
}

MHD_Result ServeObject(MHD_Connection* c, Exchange* x, const std::string& ref, bool by_id) {
  Server* sv = x->server;
  ReaderPool::Entry pooled;
  if (by_id) pooled = sv->readers.TakeConfirmed(ref);
  if (!pooled.reader) {
    chunkstore::Result<std::string> found = sv->store.Resolve(ref);
    if (!found.ok()) return Failure(c, x, found.status());
    auto taken = sv->readers.Take(*found);
    if (!taken.ok()) return Failure(c, x, taken.status());
    pooled = std::move(*taken);
  }
  const std::string id = pooled.reader->id();  // a copy: the reader may go back to the pool before headers() runs
  const uint64_t size = pooled.reader->size();
  const std::string etag = "\"" + id + "\"";
  auto headers = [&](MHD_Response* r) {
    M().add_response_header(r, "ETag", etag.c_str());
    M().add_response_header(r, "Accept-Ranges", "bytes");
    uint8_t digest[32];
    for (int i = 0; i < 32; ++i) digest[i] = static_cast<uint8_t>(std::stoi(id.substr(7 + 2 * i, 2), nullptr, 16));
    M().add_response_header(r, "Repr-Digest", ("sha-256=:" + Base64(digest, 32) + ":").c_str());
    M().add_response_header(r, "Cache-Control", by_id ? "public, max-age=31536000, immutable" : "no-cache");
    if (!by_id) M().add_response_header(r, "Content-Location", ("/objects/" + id).c_str());
  };
  if (Matches(Header(c, "If-None-Match"), etag)) {
    sv->readers.Give(std::move(pooled));
    MHD_Response* r = M().create_response_from_buffer(0, nullptr, MHD_RESPMEM_PERSISTENT);
    headers(r);
    return Queue(c, x, MHD_HTTP_NOT_MODIFIED, r);
  }
  RangeRequest ranges;
  if (const char* range = Header(c, "Range")) {
    const char* if_range = Header(c, "If-Range");
    if (!if_range || Matches(if_range, etag)) ranges = ParseRange(range, size);
  }
  if (ranges.outcome == RangeRequest::kUnsatisfiable) {
    sv->readers.Give(std::move(pooled));
    MHD_Response* r = M().create_response_from_buffer(0, nullptr, MHD_RESPMEM_PERSISTENT);
    headers(r);
    M().add_response_header(r, "Content-Range", ("bytes */" + std::to_string(size)).c_str());
    return Queue(c, x, MHD_HTTP_RANGE_NOT_SATISFIABLE, r);
  }
  auto* body = new Body;
  body->server = sv;
  body->exchange = x;
  body->reader = std::move(pooled.reader);
  body->confirmed = pooled.confirmed;
  unsigned status = MHD_HTTP_OK;
  std::string content_type = kOctets, content_range;
  if (ranges.outcome == RangeRequest::kWhole) {
    BodyPart whole;
    if (size > 0) {
      whole.range = {0, size - 1};
      whole.has_range = true;
    }
    body->parts.push_back(whole);
  } else if (ranges.ranges.size() == 1) {
    status = MHD_HTTP_PARTIAL_CONTENT;
    const ByteRange& br = ranges.ranges[0];
    BodyPart one;
    one.range = br;
    one.has_range = true;
    body->parts.push_back(one);
    content_range = "bytes " + std::to_string(br.first) + "-" + std::to_string(br.last) + "/" + std::to_string(size);
  } else {
    status = MHD_HTTP_PARTIAL_CONTENT;
    const std::string boundary = "chunkstore-" + id.substr(7, 24);
    body->parts = MultipartLayout(ranges.ranges, size, boundary, kOctets);
    content_type = "multipart/byteranges; boundary=" + boundary;
  }
  const uint64_t length = BodyLength(body->parts);
  MHD_Response* r = M().create_response_from_callback(length, BlockSize(length), Stream, body, FreeBody);
  if (!r) {
    FreeBody(body);
    return Text(c, x, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot create a response\n");
  }
  headers(r);
  M().add_response_header(r, "Content-Type", content_type.c_str());
  if (!content_range.empty()) M().add_response_header(r, "Content-Range", content_range.c_str());
  return Queue(c, x, status, r);
}

MHD_Result ListNames(MHD_Connection* c, Exchange* x) {
  const char* prefix = M().lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "prefix");
  auto names = x->server->store.List(prefix ? prefix : "");
  if (!names.ok()) return Failure(c, x, names.status());
  nlohmann::ordered_json j;
  j["names"] = nlohmann::ordered_json::array();
  for (const auto& e : *names)
    j["names"].push_back({{"name", e.name}, {"version", e.version}, {"id", e.id}, {"size", e.size},
                          {"created", IsoTime(e.created)}});
  MHD_Response* r = nullptr;
  const std::string body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  r = M().create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  M().add_response_header(r, "Content-Type", "application/json");
  M().add_response_header(r, "Cache-Control", "no-cache");
  return Queue(c, x, MHD_HTTP_OK, r, body.size());
}

// A copy from another machine (Store::Receive checks all of it before it
// commits): 200 and what it added; 422 if anything in it is not what it
// claims, 409 if it leans on something this store lacks; then nothing of
// it is kept.
MHD_Result Push(MHD_Connection* c, Exchange* x, int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Text(c, x, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the upload\n");
  auto got = x->server->store.Receive(
      [fd](uint64_t offset, void* buf, size_t n) -> Status {
        size_t done = 0;
        while (done < n) {
          const ssize_t r = ::pread(fd, static_cast<char*>(buf) + done, n - done, static_cast<off_t>(offset + done));
          if (r > 0) done += static_cast<size_t>(r);
          else if (r == 0) return Status::IOError("the upload ended early");
          else if (errno != EINTR) return Status::IOError(std::string("cannot read the upload: ") + std::strerror(errno));
        }
        return Status::OK();
      },
      static_cast<uint64_t>(st.st_size));
  if (!got.ok()) {
    if (got.status().IsCorruption()) {
      x->server->Log("chunkstore: serve: refused a push: " + Printable(got.status().message()));
      return Text(c, x, 422 /* Unprocessable Content */, "Corruption: " + got.status().message() + "\n");
    }
    if (got.status().IsNotFound())  // the sender's view of this store is behind
      return Text(c, x, MHD_HTTP_CONFLICT, "NotFound: " + got.status().message() + "\n");
    return Failure(c, x, got.status());
  }
  nlohmann::ordered_json j = {{"objects", got->objects},
                              {"chunks_written", got->chunks_written},
                              {"chunks_present", got->chunks_present},
                              {"bytes_written", got->bytes_written},
                              {"name_versions", got->name_versions}};
  return Text(c, x, MHD_HTTP_OK, j.dump() + "\n", "application/json");
}

MHD_Result TooLarge(MHD_Connection* c, Exchange* x) {
  return Text(c, x, 413 /* Content Too Large */,
              "the body is larger than this server takes (serve --max-upload-mib " +
                  std::to_string(x->server->max_upload >> 20) + ")\n");
}

MHD_Result Put(MHD_Connection* c, Exchange* x, const char* upload, size_t* upload_size) {
  if (*upload_size > 0) {
    x->spooled += *upload_size;
    if (x->server->max_upload && x->spooled > x->server->max_upload) x->too_large = true;
    if (!x->too_large && !x->spool_failed && std::fwrite(upload, 1, *upload_size, x->spool) != *upload_size)
      x->spool_failed = true;
    *upload_size = 0;
    return MHD_YES;
  }
  if (x->too_large) return TooLarge(c, x);
  if (x->spool_failed || std::fflush(x->spool) != 0)
    return Text(c, x, MHD_HTTP_INSUFFICIENT_STORAGE, "cannot keep the upload: " + std::string(std::strerror(errno)) + "\n");
  std::rewind(x->spool);
  const int fd = ::fileno(x->spool);
  if (x->push) return Push(c, x, fd);
  const char* name = M().lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name");
  auto pub = x->server->store.PublishPull(
      [fd](void* buf, size_t n) -> chunkstore::Result<size_t> {
        for (;;) {
          const ssize_t got = ::read(fd, buf, n);
          if (got >= 0) return static_cast<size_t>(got);
          if (errno != EINTR) return Status::IOError(std::string("cannot read the upload: ") + std::strerror(errno));
        }
      },
      name ? name : "");
  if (!pub.ok()) return Failure(c, x, pub.status());
  nlohmann::ordered_json j = {{"id", pub->id}, {"size", pub->size}, {"new_bytes", pub->new_bytes}};
  if (!pub->name.empty()) j["name"] = pub->name, j["version"] = pub->version;
  const std::string body = j.dump() + "\n";
  MHD_Response* r = M().create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  M().add_response_header(r, "Content-Type", "application/json");
  M().add_response_header(r, "Location", ("/objects/" + pub->id).c_str());
  return Queue(c, x, MHD_HTTP_CREATED, r, body.size());
}

// A blob's bytes, read from the view as they are sent. They are not
// verified here: what a client reads through /blobs it verifies itself, as
// it does a bucket's.
struct BlobBody {
  Server* server = nullptr;
  Exchange* exchange = nullptr;
  std::string key;
  uint64_t offset = 0, length = 0;
};

ssize_t StreamBlob(void* cls, uint64_t pos, char* buf, size_t max) {
  auto* b = static_cast<BlobBody*>(cls);
  if (pos >= b->length) return MHD_CONTENT_READER_END_OF_STREAM;
  const size_t want = static_cast<size_t>(std::min<uint64_t>(max, b->length - pos));
  size_t got = 0;
  Status s = b->server->blobs->GetRange(b->key, b->offset + pos, want, buf, &got);
  if (!s.ok() || got == 0) {
    b->server->Log("chunkstore: serve: stopped sending blob " + Printable(b->key) + ": " +
                   Printable(s.ok() ? std::string("it ended early") : s.message()));
    return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  b->exchange->body_bytes += got;
  return static_cast<ssize_t>(got);
}

MHD_Result SendBlobAnswer(MHD_Connection* c, Exchange* x, BlobAnswer a) {
  MHD_Response* r = nullptr;
  if (a.stream) {
    auto* body = new BlobBody{x->server, x, std::move(a.key), a.offset, a.length};
    r = M().create_response_from_callback(a.length, BlockSize(a.length), StreamBlob, body,
                                          [](void* p) { delete static_cast<BlobBody*>(p); });
    if (!r) {
      delete body;
      return Text(c, x, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot create a response\n");
    }
  } else {
    r = M().create_response_from_buffer(a.body.size(), a.body.data(), MHD_RESPMEM_MUST_COPY);
  }
  for (const auto& [name, value] : a.headers) M().add_response_header(r, name.c_str(), value.c_str());
  return Queue(c, x, a.status, r, a.stream ? 0 : a.body.size());
}

MHD_Result ServeBlobs(MHD_Connection* c, Exchange* x, const std::string& path) {
  auto arg = [c](const char* name) { return M().lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name); };
  return SendBlobAnswer(c, x, AnswerBlobRequest(*x->server->blobs, x->method, path, arg, Header(c, "Range")));
}

bool IsBlobPath(const std::string& u) { return u == "/blobs" || u.rfind("/blobs/", 0) == 0; }

MHD_Result Handle(void* cls, MHD_Connection* c, const char* url, const char* method, const char*,
                  const char* upload, size_t* upload_size, void** con_cls) {
  auto* sv = static_cast<Server*>(cls);
  auto* x = static_cast<Exchange*>(*con_cls);
  if (!x) {
    x = new Exchange;
    x->server = sv;
    x->method = method;
    x->url = url;
    const MHD_ConnectionInfo* info = M().get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info && info->client_addr) {
      char addr[INET6_ADDRSTRLEN] = "?";
      if (info->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(info->client_addr)->sin_addr, addr, sizeof addr);
      else if (info->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(info->client_addr)->sin6_addr, addr, sizeof addr);
      x->peer = addr;
    }
    *con_cls = x;
    const std::string m = method;
    if (IsBlobPath(url) && m != "GET" && m != "HEAD") return SendBlobAnswer(c, x, RefuseBlobWrite(x->url.substr(6)));
    if (m == "PUT" || m == "POST" || m == "DELETE") {
      // Refused before the body is read.
      if (!sv->allow_write) return Text(c, x, MHD_HTTP_METHOD_NOT_ALLOWED, "writes are off (serve --allow-write)\n");
      const char* auth = Header(c, "Authorization");
      if (!auth || std::strncmp(auth, "Bearer ", 7) != 0 || !ConstantTimeEquals(auth + 7, sv->token)) {
        static const char kDenied[] = "a write needs the server's token (Authorization: Bearer ...)\n";
        MHD_Response* r =
            M().create_response_from_buffer(sizeof kDenied - 1, const_cast<char*>(kDenied), MHD_RESPMEM_PERSISTENT);
        M().add_response_header(r, "WWW-Authenticate", "Bearer realm=\"chunkstore\"");
        M().add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
        return Queue(c, x, MHD_HTTP_UNAUTHORIZED, r);
      }
      x->push = m == "POST" && std::string(url) == "/push";
      if (!x->push && (m != "PUT" || std::string(url) != "/objects"))
        return Text(c, x, MHD_HTTP_METHOD_NOT_ALLOWED, "only PUT /objects and POST /push write\n");
      // A body declared too large is refused before any of it is read.
      if (const char* len = Header(c, "Content-Length"); len && sv->max_upload) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long n = std::strtoull(len, &end, 10);
        if (errno == ERANGE || (end && *end == '\0' && n > sv->max_upload)) return TooLarge(c, x);
      }
      x->spool = std::tmpfile();
      if (!x->spool) return Text(c, x, MHD_HTTP_INSUFFICIENT_STORAGE, "cannot keep the upload\n");
      x->write_allowed = true;
    }
    return MHD_YES;
  }
  if (x->answered) {  // a refusal queued at the first call: the body is discarded
    *upload_size = 0;
    return MHD_YES;
  }
  const std::string m = method, u = url;
  if (x->write_allowed) return Put(c, x, upload, upload_size);
  if (m != "GET" && m != "HEAD") return Text(c, x, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD (and PUT /objects)\n");
  if (IsBlobPath(u)) return ServeBlobs(c, x, u.substr(6));
  if (u.rfind("/objects/", 0) == 0) {
    const std::string ref = u.substr(9);
    if (ref.size() != 71 || ref.rfind("sha256:", 0) != 0)
      return Text(c, x, MHD_HTTP_BAD_REQUEST, "objects are named /objects/sha256:<64 hex>\n");
    return ServeObject(c, x, ref, true);
  }
  if (u == "/names" || u == "/names/") return ListNames(c, x);
  if (u.rfind("/names/", 0) == 0) return ServeObject(c, x, u.substr(7), false);
  return Text(c, x, MHD_HTTP_NOT_FOUND, "not found: /objects/sha256:<hex>, /names/<name>, /names?prefix=, /blobs\n");
}

void Completed(void* cls, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode toe) {
  auto* sv = static_cast<Server*>(cls);
  auto* x = static_cast<Exchange*>(*con_cls);
  if (!x) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - x->start).count();
  char line[64];
  std::snprintf(line, sizeof line, " %u %llu %.1fms", x->status, static_cast<unsigned long long>(x->body_bytes), ms);
  sv->Log(x->peer + " \"" + x->method + " " + Printable(x->url) + "\"" + line +
              (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection ended early)"),
          false);
  delete x;
  *con_cls = nullptr;
}

}  // namespace

int CmdServe(const Globals& g, const ServeArgs& a) {
  // The address: HOST:PORT (IPv4), [HOST]:PORT (IPv6) or PORT (loopback).
  std::string host = "127.0.0.1", port_text = a.listen;
  const size_t colon = a.listen.rfind(':');
  if (colon != std::string::npos) {
    host = a.listen.substr(0, colon);
    port_text = a.listen.substr(colon + 1);
    if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  char* end = nullptr;
  const unsigned long port = std::strtoul(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port > 65535)
    return Fail(Status::InvalidArgument("--listen takes HOST:PORT, not '" + a.listen + "'"), kUsage);
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  bool v6 = false;
  if (inet_pton(AF_INET, host.c_str(), &reinterpret_cast<sockaddr_in*>(&addr)->sin_addr) == 1) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(port));
    addr_len = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr) == 1) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    addr_len = sizeof(sockaddr_in6);
    v6 = true;
  } else {
    return Fail(Status::InvalidArgument("--listen: '" + host + "' is not an IP address"), kUsage);
  }
  (void)addr_len;
  std::string token;
  if (a.allow_write) {
    if (a.token_file.empty()) return Fail(Status::InvalidArgument("--allow-write needs --token-file"), kUsage);
    chunkstore::Result<std::string> t = ReadTokenFile(a.token_file);
    if (!t.ok()) return Fail(t.status(), t.status().IsInvalidArgument() ? kUsage : kFailure);
    token = *t;
  }
  chunkstore::Result<const MhdApi*> mhd = Mhd();
  if (!mhd.ok()) return Fail(mhd.status(), kFailure);
  g_mhd = *mhd;
  InterruptGuard guard;
  // A server reads the same chunks again and again (ranges of popular
  // objects): each is verified once, then served from memory.
  Globals with_cache = g;
  with_cache.cache_bytes = a.cache_mib << 20;
  auto store_r = OpenStore(with_cache, a.allow_write ? Access::kCreate : Access::kRead);
  if (!store_r.ok()) return FailOpen(store_r.status());
  chunkstore::Store& store = **store_r;
  Server sv(store);
  auto view = store.OpenBlobView();
  if (!view.ok()) return Fail(view.status(), kFailure);
  sv.blobs = std::move(*view);
  sv.allow_write = a.allow_write;
  sv.max_upload = a.max_upload_mib << 20;
  sv.whole_from_cache = with_cache.cache_bytes / 2;
  sv.token = token;
  const unsigned threads = a.threads ? a.threads : std::max(4u, 2 * std::thread::hardware_concurrency());
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  if (v6) flags |= MHD_USE_IPv6;
  MHD_Daemon* d = M().start_daemon(
      flags, static_cast<uint16_t>(port), nullptr, nullptr, &Handle, &sv, MHD_OPTION_SOCK_ADDR,
      reinterpret_cast<sockaddr*>(&addr), MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT,
      a.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, a.max_per_client, MHD_OPTION_CONNECTION_TIMEOUT,
      a.timeout_seconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, size_t{64 * 1024}, MHD_OPTION_NOTIFY_COMPLETED,
      &Completed, &sv, MHD_OPTION_END);
  if (!d) return Fail(Status::IOError("cannot listen on " + a.listen + ": " + std::strerror(errno)), kFailure);
  const MHD_DaemonInfo* info = M().get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  const unsigned bound = info ? info->port : static_cast<unsigned>(port);
  const std::string where = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(bound);
  if (g.json) {
    nlohmann::ordered_json j = {{"listen", where}, {"url", "http://" + where}, {"store", store.dir()},
                                {"writes", a.allow_write}};
    Print(j.dump() + "\n");
  } else if (!g.quiet) {
    Print("serving " + store.dir() + " on http://" + where + (a.allow_write ? " (writes allowed)" : "") + "\n");
  }
  // Until Ctrl-C (or SIGTERM); a bucket store takes in what other machines
  // publish every few seconds.
  auto last = std::chrono::steady_clock::now();
  while (!g_interrupted.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sv.FlushLog();
    if (store.is_bucket() && std::chrono::steady_clock::now() - last > std::chrono::seconds(5)) {
      last = std::chrono::steady_clock::now();
      Status s = store.Refresh();
      if (!s.ok()) sv.Log("chunkstore: serve: cannot refresh: " + Printable(s.message()));
    }
  }
  M().stop_daemon(d);
  sv.FlushLog();
  return kOk;
}

}  // namespace cli

// SPDX-License-Identifier: Apache-2.0
// S3BlobStore: blobs as objects in an S3 bucket (see s3_blob_store.h).
//
// Every request is signed with the payload's SHA-256, so the service
// rejects a body damaged on the way. Each thread keeps its own curl handle
// and with it a kept-alive connection; readers fetch chunks from several
// threads at once.
#include "backend/s3/s3_blob_store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_set>

#include "chunkstore/env.h"
#include "backend/s3/curl_api.h"
#include "backend/s3/sigv4.h"
#include "backend/s3/xml.h"
#include "hash/digest.h"

namespace chunkstore::internal {

namespace {

// Parts of a multipart upload; blobs up to this size go in one PUT.
constexpr uint64_t kPartSize = 16ull << 20;
constexpr int kPartsInFlight = 3;

std::string GetEnv(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// libcurl's functions; only called once NewS3BlobStore has loaded them.
const CurlApi& Api() { return **Curl(); }

struct CurlHandle {
  CURL* h = nullptr;
  CurlHandle() { h = Api().easy_init(); }
  ~CurlHandle() {
    if (h) Api().easy_cleanup(h);
  }
};

CURL* ThreadHandle() {
  thread_local CurlHandle handle;
  return handle.h;
}

std::string AmzDate() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// "2026-11-30T13:31:43.705Z" -> unix seconds (0 if malformed).
int64_t ParseIsoTime(const std::string& s) {
  std::tm tm{};
  if (!strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

// The text of a child of the answer's root element ("" when the body is
// not XML, such as a proxy's HTML page, or lacks it).
std::string XmlField(const std::string& body, const std::string& child) {
  Result<XmlElement> doc = ParseXml(body);
  return doc.ok() ? doc->ChildText(child) : std::string();
}

// The most of an answer's body kept in memory: a whole blob (a config, a
// log record, a checkpoint; packs are read by range) or an error page:
// half this machine's memory, at least 1 GiB and at most 16 GiB. A
// checkpoint holds a whole store's state (about 130 bytes a chunk), so a
// larger one could not be taken in here anyway; a service that sends
// more, or says it will, is refused rather than allowed to exhaust memory.
uint64_t MaxBodyBytes() {
  static const uint64_t max = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    const uint64_t half = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : 0;
    return std::clamp<uint64_t>(half, 1ull << 30, 16ull << 30);
  }();
  return max;
}
// The most keys (or uploads) one listing may return, pages included.
constexpr size_t kMaxListed = 10'000'000;

struct Request {
  std::string method = "GET";
  std::string key;  // full object key; empty for the bucket itself
  std::vector<std::pair<std::string, std::string>> query;
  const uint8_t* body = nullptr;
  size_t body_len = 0;
  // Or the body is body_len bytes of this file from body_offset, read as
  // they are sent (no copy in memory: a part of a pack upload).
  const File* body_file = nullptr;
  uint64_t body_offset = 0;
  std::string range;  // "bytes=a-b"
  bool if_none_match = false;  // "If-None-Match: *": only if the key is free
  // Ranged GETs land here; everything else (and error bodies) in
  // Response::body.
  uint8_t* out = nullptr;
  size_t out_cap = 0;
  uint64_t range_first = 0;  // the range's first byte (out)
};

struct Response {
  long status = 0;
  std::string body;
  size_t out_len = 0;
  std::string etag;
  uint64_t content_length = 0;
  int attempts = 0;  // requests sent for this answer (more than 1: retried)
  uint64_t seen = 0;  // body bytes of a whole-blob answer to a ranged GET
  bool range_done = false;  // ... which had delivered the range, and was cut off
  bool too_large = false;   // a body past MaxBodyBytes(), cut off
};

struct Transfer {
  const Request* req;
  Response* resp;
  CURL* h;
  size_t sent = 0;
};

size_t OnWrite(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  long code = 0;
  Api().easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &code);
  if (t->req->out && code == 206) {
    const size_t room = t->req->out_cap - t->resp->out_len;
    const size_t take = std::min(room, n);
    std::memcpy(t->req->out + t->resp->out_len, data, take);
    t->resp->out_len += take;
    if (take < n) {  // more than the range asked for: what is needed is here
      t->resp->range_done = true;
      return 0;
    }
    return n;
  }
  Response* r = t->resp;
  if (t->req->out && code == 200) {
    // The whole blob for a ranged GET (the service ignored the range): only
    // the range is kept, and the transfer is cut off once it has passed.
    const uint64_t first = t->req->range_first, end = first + t->req->out_cap;
    const uint64_t from = std::max(first, r->seen), to = std::min(end, r->seen + n);
    if (from < to && from == first + r->out_len) {
      std::memcpy(t->req->out + r->out_len, data + (from - r->seen), static_cast<size_t>(to - from));
      r->out_len += static_cast<size_t>(to - from);
    }
    r->seen += n;
    if (r->seen >= end) {
      r->range_done = true;
      return 0;
    }
    return n;
  }
  if (r->content_length > MaxBodyBytes() || r->body.size() + n > MaxBodyBytes()) {
    r->too_large = true;
    return 0;
  }
  r->body.append(data, n);
  return n;
}

size_t OnRead(char* buf, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = std::min(size * nmemb, t->req->body_len - t->sent);
  if (t->req->body_file) {
    size_t got = 0;
    if (!t->req->body_file->ReadAt(t->req->body_offset + t->sent, n, buf, &got).ok() || got != n)
      return CURL_READFUNC_ABORT;  // the request fails; its hash would not match anyway
  } else {
    std::memcpy(buf, t->req->body + t->sent, n);
  }
  t->sent += n;
  return n;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<size_t>(offset) > t->req->body_len)
    return CURL_SEEKFUNC_CANTSEEK;
  t->sent = static_cast<size_t>(offset);
  return CURL_SEEKFUNC_OK;
}

size_t OnHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  std::string line(data, n);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.pop_back();
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "etag") t->resp->etag = value;
    if (name == "content-length") t->resp->content_length = std::strtoull(value.c_str(), nullptr, 10);
  }
  return n;
}

class S3BlobStore final : public BlobStore {
 public:
  S3BlobStore(S3Location where, S3Options opts) : where_(std::move(where)), opts_(std::move(opts)) {
    path_style_ = !opts_.endpoint.empty();
    if (path_style_) {
      base_ = opts_.endpoint;
      while (!base_.empty() && base_.back() == '/') base_.pop_back();
      const size_t scheme = base_.find("://");
      host_ = scheme == std::string::npos ? base_ : base_.substr(scheme + 3);
      host_ = host_.substr(0, host_.find('/'));
    } else {
      host_ = where_.bucket + ".s3." + opts_.region + ".amazonaws.com";
      base_ = "https://" + host_;
    }
  }

  Status CreateBucketIfMissing() {
    Request r;
    r.method = "HEAD";
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status == 200) return Status::OK();
    if (resp.status != 404) return Failure(r, resp);
    Request c;
    c.method = "PUT";
    std::string config;
    if (opts_.region != "us-east-1") {
      config = "<CreateBucketConfiguration><LocationConstraint>" + opts_.region +
               "</LocationConstraint></CreateBucketConfiguration>";
      c.body = reinterpret_cast<const uint8_t*>(config.data());
      c.body_len = config.size();
    }
    CHUNKSTORE_RETURN_IF_ERROR(Perform(c, &resp));
    if (resp.status == 200 || XmlField(resp.body, "Code") == "BucketAlreadyOwnedByYou")
      return Status::OK();
    return Failure(c, resp);
  }

  Status Put(const std::string& key, const void* data, size_t n) override {
    Request r;
    r.method = "PUT";
    r.key = Full(key);
    r.body = static_cast<const uint8_t*>(data);
    r.body_len = n;
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status != 200) return Failure(r, resp);
    return Status::OK();
  }

  Result<bool> PutIfAbsent(const std::string& key, const void* data, size_t n) override {
    Request r;
    r.method = "PUT";
    r.key = Full(key);
    r.body = static_cast<const uint8_t*>(data);
    r.body_len = n;
    r.if_none_match = true;
    Response resp;
    bool repeated = false;  // more than one request: an earlier one may have stored it
    for (int conflicts = 0;; ++conflicts) {
      CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
      repeated |= resp.attempts > 1 || conflicts > 0;
      // 409: a conditional write of the key is under way (perhaps our own
      // earlier attempt); its outcome decides ours.
      if (resp.status != 409 || conflicts >= 5) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50 << conflicts));
    }
    if (resp.status == 200) return true;
    if (resp.status == 412) {
      if (!repeated) return false;
      // A retry: the attempt before it may have stored the blob and lost
      // the answer. Then the blob is ours if it holds our bytes.
      Result<std::string> have = Get(key);
      if (!have.ok()) return have.status();
      return have->size() == n && (n == 0 || std::memcmp(have->data(), data, n) == 0);
    }
    const std::string code = XmlField(resp.body, "Code");
    if (resp.status == 501 || code == "NotImplemented")
      return Status::Unsupported(Describe() + " does not take conditional writes (If-None-Match)");
    return Failure(r, resp);
  }

  Status PutFile(const std::string& key, const File& file, uint64_t size) override {
    if (size <= kPartSize) {
      Request r;
      r.method = "PUT";
      r.key = Full(key);
      r.body_file = &file;
      r.body_len = static_cast<size_t>(size);
      Response resp;
      CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
      if (resp.status != 200) return Failure(r, resp);
      return Status::OK();
    }
    return PutMultipart(key, file, size);
  }

  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf,
                  size_t* got) override {
    *got = 0;
    if (n == 0) return Status::OK();
    Request r;
    r.key = Full(key);
    r.range = "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + n - 1);
    r.out = static_cast<uint8_t*>(buf);
    r.out_cap = n;
    r.range_first = offset;
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status == 416) return Status::OK();  // offset at or past the end
    if (resp.status == 206 || resp.status == 200) {  // 200: the service ignored the range (OnWrite)
      *got = resp.out_len;
      return Status::OK();
    }
    return Failure(r, resp);
  }

  Result<std::string> Get(const std::string& key) override {
    Request r;
    r.key = Full(key);
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status != 200) return Failure(r, resp);
    return std::move(resp.body);
  }

  Result<uint64_t> Size(const std::string& key) override {
    Request r;
    r.method = "HEAD";
    r.key = Full(key);
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status != 200) return Failure(r, resp);
    return resp.content_length;
  }

  Result<std::vector<BlobInfo>> List(const std::string& prefix,
                                     const std::string& start_after) override {
    std::vector<BlobInfo> out;
    std::string token;
    const std::string full_prefix = Full(prefix);
    std::unordered_set<std::string> tokens;  // a page that leads back to one already read would loop
    for (;;) {
      Request r;
      r.query = {{"list-type", "2"}, {"prefix", full_prefix}};
      if (!token.empty()) r.query.emplace_back("continuation-token", token);
      else if (!start_after.empty()) r.query.emplace_back("start-after", Full(start_after));
      Response resp;
      CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
      if (resp.status != 200) return Failure(r, resp);
      Result<XmlElement> doc = ParseXml(resp.body);
      // The service wrote the listing, not the store: an answer it cannot
      // parse says nothing of the store's data (verify must not call it
      // damage), as a failed request says nothing.
      if (!doc.ok()) return Status::IOError("listing " + Describe() + ": " + doc.status().message());
      for (const XmlElement& item : doc->children) {
        if (item.name != "Contents") continue;
        BlobInfo b;
        b.key = item.ChildText("Key");
        // Only what was asked for: a key the service adds outside the
        // prefix is not this store's (and callers cut the prefix off).
        if (b.key.compare(0, full_prefix.size(), full_prefix) != 0) continue;
        b.key = b.key.substr(root_len());
        b.size = std::strtoull(item.ChildText("Size").c_str(), nullptr, 10);
        b.modified = ParseIsoTime(item.ChildText("LastModified"));
        out.push_back(std::move(b));
      }
      if (doc->ChildText("IsTruncated") != "true") break;
      token = doc->ChildText("NextContinuationToken");
      if (token.empty()) break;
      if (!tokens.insert(token).second || out.size() > kMaxListed)
        return Status::IOError("listing " + Describe() + "/" + prefix +
                               (out.size() > kMaxListed ? " passed " + std::to_string(kMaxListed) + " keys"
                                                        : " goes round in a circle (a continuation token came twice)"));
    }
    return out;
  }

  Result<std::vector<UploadInfo>> ListUploads(const std::string& prefix) override {
    std::vector<UploadInfo> out;
    std::string key_marker, id_marker;
    const std::string full_prefix = Full(prefix);
    std::unordered_set<std::string> markers;  // as List's tokens
    for (;;) {
      Request r;
      r.query = {{"uploads", ""}, {"prefix", full_prefix}};
      if (!key_marker.empty()) r.query.emplace_back("key-marker", key_marker);
      if (!id_marker.empty()) r.query.emplace_back("upload-id-marker", id_marker);
      Response resp;
      CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
      if (resp.status != 200) return Failure(r, resp);
      Result<XmlElement> doc = ParseXml(resp.body);
      if (!doc.ok()) return Status::IOError("listing the uploads of " + Describe() + ": " + doc.status().message());
      for (const XmlElement& item : doc->children) {
        if (item.name != "Upload") continue;
        UploadInfo u;
        u.key = item.ChildText("Key");
        if (u.key.compare(0, full_prefix.size(), full_prefix) != 0) continue;
        u.key = u.key.substr(root_len());
        u.id = item.ChildText("UploadId");
        u.started = ParseIsoTime(item.ChildText("Initiated"));
        if (!u.id.empty()) out.push_back(std::move(u));
      }
      if (doc->ChildText("IsTruncated") != "true") break;
      key_marker = doc->ChildText("NextKeyMarker");
      id_marker = doc->ChildText("NextUploadIdMarker");
      if (key_marker.empty() && id_marker.empty()) break;
      if (!markers.insert(key_marker + '\n' + id_marker).second || out.size() > kMaxListed)
        return Status::IOError("listing the uploads of " + Describe() + " goes round in a circle or passed " +
                               std::to_string(kMaxListed));
    }
    return out;
  }

  Status AbortUpload(const UploadInfo& upload) override {
    Request r;
    r.method = "DELETE";
    r.key = Full(upload.key);
    r.query = {{"uploadId", upload.id}};
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status == 204 || resp.status == 200 || resp.status == 404) return Status::OK();
    return Failure(r, resp);
  }

  // Begins an upload and returns its id (the first step of a multipart
  // upload; StartUpload below leaves it open).
  Result<std::string> BeginUpload(const std::string& key) {
    Request init;
    init.method = "POST";
    init.key = Full(key);
    init.query = {{"uploads", ""}};
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(init, &resp));
    if (resp.status != 200) return Failure(init, resp);
    const std::string upload_id = XmlField(resp.body, "UploadId");
    if (upload_id.empty()) return Status::IOError(Describe() + ": no UploadId in the answer to a multipart upload");
    return upload_id;
  }

  Status Delete(const std::string& key) override {
    Request r;
    r.method = "DELETE";
    r.key = Full(key);
    Response resp;
    CHUNKSTORE_RETURN_IF_ERROR(Perform(r, &resp));
    if (resp.status == 204 || resp.status == 200 || resp.status == 404) return Status::OK();
    return Failure(r, resp);
  }

  std::string Describe() const override {
    return "s3://" + where_.bucket + (where_.prefix.empty() ? "" : "/" + where_.prefix);
  }
  uint64_t requests() const override { return requests_.load(std::memory_order_relaxed); }

 private:
  size_t root_len() const { return where_.prefix.empty() ? 0 : where_.prefix.size() + 1; }
  std::string Full(const std::string& key) const {
    return where_.prefix.empty() ? key : where_.prefix + "/" + key;
  }

  // The SHA-256 of n bytes of file from offset, read a MiB at a time.
  static Result<std::string> FileSha256Hex(const File& file, uint64_t offset, uint64_t n) {
    Sha256 h;
    std::vector<uint8_t> buf(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20)));
    for (uint64_t done = 0; done < n;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done));
      size_t got = 0;
      CHUNKSTORE_RETURN_IF_ERROR(file.ReadAt(offset + done, want, buf.data(), &got));
      if (got != want) return Status::IOError("a staged pack shrank while it was uploaded");
      h.Update(buf.data(), got);
      done += got;
    }
    return h.Finish().Hex();
  }

  // A multipart upload lives on the service between its start and its
  // completion. A gateway that restarts in between may forget it: a part or
  // the completion is then answered with an error (NoSuchUpload, or 5xx
  // until the request-level retries are spent) although the service is up
  // again. The parts are then of no use, so the upload starts over once,
  // from the file. A service that cannot be reached, or that refuses the
  // credentials, fails the upload as any other request does.
  Status PutMultipart(const std::string& key, const File& file, uint64_t size) {
    bool answered = false;
    Status s = PutMultipartOnce(key, file, size, &answered);
    if (s.ok() || !answered || s.IsPermissionDenied()) return s;
    Status again = PutMultipartOnce(key, file, size, &answered);
    if (again.ok() || again.IsPermissionDenied()) return again;
    return Status::IOError(again.message() + " (the upload was started over once; the first time: " +
                           s.message() + ")");
  }

  // *answered: whether a part or the completion of the started upload got
  // an error answer from the service (not a transport failure).
  Status PutMultipartOnce(const std::string& key, const File& file, uint64_t size, bool* answered) {
    *answered = false;
    Result<std::string> begun = BeginUpload(key);
    if (!begun.ok()) return begun.status();
    const std::string upload_id = *begun;
    const size_t parts = static_cast<size_t>((size + kPartSize - 1) / kPartSize);
    std::vector<std::string> etags(parts);
    std::vector<std::future<Status>> inflight;
    std::atomic<bool> part_answered{false};
    Status failed;
    auto collect = [&](size_t keep) {
      while (inflight.size() > keep) {
        Status s = inflight.front().get();
        inflight.erase(inflight.begin());
        if (failed.ok() && !s.ok()) failed = s;
      }
    };
    for (size_t i = 0; i < parts && failed.ok(); ++i) {
      collect(kPartsInFlight - 1);
      inflight.push_back(std::async(std::launch::async, [&, i]() -> Status {
        const uint64_t off = i * kPartSize;
        // Sent straight from the staged file: an upload holds no copy of
        // its parts, whatever their number and size.
        Request part;
        part.method = "PUT";
        part.key = Full(key);
        part.query = {{"partNumber", std::to_string(i + 1)}, {"uploadId", upload_id}};
        part.body_file = &file;
        part.body_offset = off;
        part.body_len = static_cast<size_t>(std::min(kPartSize, size - off));
        Response pr;
        CHUNKSTORE_RETURN_IF_ERROR(Perform(part, &pr));
        if (pr.status != 200) {
          part_answered = true;
          return Failure(part, pr);
        }
        etags[i] = pr.etag;
        return Status::OK();
      }));
    }
    collect(0);
    *answered = part_answered;
    if (failed.ok()) {
      std::string xml = "<CompleteMultipartUpload>";
      for (size_t i = 0; i < parts; ++i)
        xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] +
               "</ETag></Part>";
      xml += "</CompleteMultipartUpload>";
      Request done;
      done.method = "POST";
      done.key = Full(key);
      done.query = {{"uploadId", upload_id}};
      done.body = reinterpret_cast<const uint8_t*>(xml.data());
      done.body_len = xml.size();
      Response dr;
      failed = Perform(done, &dr);
      // A 200 may still carry an <Error> body (the service failed late).
      if (failed.ok() && (dr.status != 200 || dr.body.find("<Error>") != std::string::npos)) {
        *answered = true;
        failed = Failure(done, dr);
      }
      if (failed.ok()) return Status::OK();
    }
    Request abort;
    abort.method = "DELETE";
    abort.key = Full(key);
    abort.query = {{"uploadId", upload_id}};
    Response ar;
    Perform(abort, &ar);  // best effort; gc's orphan rule covers the rest
    return failed;
  }

  // An error answer as a Status: NotFound, PermissionDenied or IOError,
  // with the service's code and message.
  Status Failure(const Request& r, const Response& resp) const {
    const std::string code = XmlField(resp.body, "Code");
    std::string msg = XmlField(resp.body, "Message");
    const std::string what = r.method + " " + (r.key.empty() ? "s3://" + where_.bucket
                                                             : "s3://" + where_.bucket + "/" + r.key);
    std::string detail = "HTTP " + std::to_string(resp.status);
    if (!code.empty()) detail += " " + code;
    if (!msg.empty()) detail += ": " + msg;
    if (resp.status == 404) {
      if (code == "NoSuchBucket" || (r.key.empty() && code.empty()))
        return Status::NotFound("bucket " + where_.bucket + " does not exist at " + base_ + " (" +
                                detail + ")");
      return Status::NotFound("no blob " + what.substr(what.find(' ') + 1) + " (" + detail + ")");
    }
    if (resp.status == 403 || resp.status == 401)
      return Status::PermissionDenied(
          what + " was refused (" + detail +
          "); check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's permissions");
    return Status::IOError(what + " failed (" + detail + ")");
  }

  static bool Retryable(CURLcode rc) {
    switch (rc) {
      case CURLE_COULDNT_CONNECT:
      case CURLE_OPERATION_TIMEDOUT:
      case CURLE_SEND_ERROR:
      case CURLE_RECV_ERROR:
      case CURLE_GOT_NOTHING:
      case CURLE_PARTIAL_FILE:
      case CURLE_SSL_CONNECT_ERROR:
      case CURLE_COULDNT_RESOLVE_HOST:
        return true;
      default:
        return false;
    }
  }

  // Sends the request, retrying transport failures and 5xx/429 answers
  // with backoff. OK means an HTTP answer arrived (any status).
  Status Perform(const Request& req, Response* resp) const {
    std::string payload_hash;
    if (req.body_file) {
      Result<std::string> h = FileSha256Hex(*req.body_file, req.body_offset, req.body_len);
      if (!h.ok()) return h.status();
      payload_hash = std::move(*h);
    } else {
      payload_hash = Sha256Hex(req.body, req.body_len);
    }
    std::string path = "/";
    if (path_style_) path += UriEncode(where_.bucket, false) + (req.key.empty() ? "" : "/");
    path += UriEncode(req.key, true);
    const std::string query = CanonicalQuery(req.query);
    const std::string url = base_ + path + (query.empty() ? "" : "?" + query);
    thread_local std::mt19937 jitter(std::random_device{}());
    std::string last_error;
    const int attempts = std::max(1, opts_.max_attempts);
    for (int attempt = 0; attempt < attempts; ++attempt) {
      if (attempt > 0) {
        const int base_ms = std::min(200 << std::min(attempt - 1, 5), 5000);
        std::this_thread::sleep_for(
            std::chrono::milliseconds(base_ms / 2 + static_cast<int>(jitter() % (base_ms / 2 + 1))));
      }
      *resp = Response{};
      CURL* h = ThreadHandle();
      if (!h) return Status::IOError("cannot create a curl handle");
      Api().easy_reset(h);
      SigV4Request sr;
      sr.method = req.method;
      sr.canonical_uri = path;
      sr.query = req.query;
      sr.payload_sha256 = payload_hash;
      sr.amz_date = AmzDate();
      sr.headers = {{"host", host_}, {"x-amz-content-sha256", payload_hash}, {"x-amz-date", sr.amz_date}};
      if (!req.range.empty()) sr.headers.emplace_back("range", req.range);
      if (!opts_.session_token.empty())
        sr.headers.emplace_back("x-amz-security-token", opts_.session_token);
      const std::string auth = SignV4(sr, {opts_.access_key, opts_.secret_key, opts_.region});
      curl_slist* headers = nullptr;
      for (const auto& [name, value] : sr.headers)
        if (name != "host") headers = Api().slist_append(headers, (name + ": " + value).c_str());
      headers = Api().slist_append(headers, ("Authorization: " + auth).c_str());
      headers = Api().slist_append(headers, "Expect:");
      if (req.if_none_match) headers = Api().slist_append(headers, "If-None-Match: *");
      if (req.method == "PUT" || req.method == "POST")
        headers = Api().slist_append(headers, "Content-Type: application/octet-stream");
      Transfer t{&req, resp, h};
      Api().easy_setopt(h, CURLOPT_URL, url.c_str());
      Api().easy_setopt(h, CURLOPT_HTTPHEADER, headers);
      Api().easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
      Api().easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
      if (!opts_.ca_bundle.empty()) Api().easy_setopt(h, CURLOPT_CAINFO, opts_.ca_bundle.c_str());
      // Under 1 KiB/s for the stall timeout is a stall: a service that
      // sends a byte now and then must not hold a request for ever. Not
      // for a POST (completing a multipart upload), which a service may
      // keep alive with a space now and then while it assembles the parts.
      Api().easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, req.method == "POST" ? 1L : 1024L);
      Api().easy_setopt(h, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(opts_.stall_timeout_ms / 1000)));
      Api().easy_setopt(h, CURLOPT_WRITEFUNCTION, OnWrite);
      Api().easy_setopt(h, CURLOPT_WRITEDATA, &t);
      Api().easy_setopt(h, CURLOPT_HEADERFUNCTION, OnHeader);
      Api().easy_setopt(h, CURLOPT_HEADERDATA, &t);
      if (req.method == "HEAD") {
        Api().easy_setopt(h, CURLOPT_NOBODY, 1L);
      } else if (req.method == "PUT") {
        Api().easy_setopt(h, CURLOPT_UPLOAD, 1L);
        Api().easy_setopt(h, CURLOPT_READFUNCTION, OnRead);
        Api().easy_setopt(h, CURLOPT_READDATA, &t);
        Api().easy_setopt(h, CURLOPT_SEEKFUNCTION, OnSeek);
        Api().easy_setopt(h, CURLOPT_SEEKDATA, &t);
        Api().easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body_len));
      } else if (req.method == "POST") {
        Api().easy_setopt(h, CURLOPT_POST, 1L);
        Api().easy_setopt(h, CURLOPT_POSTFIELDS, req.body ? reinterpret_cast<const char*>(req.body) : "");
        Api().easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body_len));
      } else if (req.method != "GET") {
        Api().easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method.c_str());
      }
      requests_.fetch_add(1, std::memory_order_relaxed);
      const CURLcode rc = Api().easy_perform(h);
      Api().slist_free_all(headers);
      if (rc == CURLE_WRITE_ERROR && resp->too_large)
        return Status::IOError(req.method + " " + url + ": the answer is larger than " +
                               std::to_string(MaxBodyBytes() >> 20) + " MiB, more than this machine could take in");
      if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && resp->range_done)) {
        last_error = Api().easy_strerror(rc);
        if (Retryable(rc)) continue;
        return Status::IOError(req.method + " " + url + ": " + last_error);
      }
      Api().easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
      resp->attempts = attempt + 1;
      // 501 (a feature the service lacks) is an answer, not an outage.
      if ((resp->status >= 500 && resp->status != 501) || resp->status == 429) {
        last_error = "HTTP " + std::to_string(resp->status);
        const std::string code = XmlField(resp->body, "Code");
        if (!code.empty()) last_error += " " + code;
        continue;
      }
      return Status::OK();
    }
    return Status::IOError(req.method + " " + url + " failed after " + std::to_string(attempts) +
                           " attempts: " + last_error);
  }

  S3Location where_;
  S3Options opts_;
  bool path_style_ = true;
  mutable std::atomic<uint64_t> requests_{0};  // counted in const Perform
  std::string base_;  // scheme://host[:port]
  std::string host_;
};

}  // namespace

Result<S3Location> ParseS3Url(const std::string& url) {
  if (url.rfind("s3://", 0) != 0) return Status::InvalidArgument("not an s3:// URL: " + url);
  std::string rest = url.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  S3Location loc;
  const size_t slash = rest.find('/');
  loc.bucket = rest.substr(0, slash);
  if (slash != std::string::npos) loc.prefix = rest.substr(slash + 1);
  if (loc.bucket.size() < 3 || loc.bucket.size() > 63 ||
      loc.bucket.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-") != std::string::npos)
    return Status::InvalidArgument("malformed bucket name in " + url +
                                   ": 3 to 63 lower-case letters, digits, '.' or '-'");
  if (loc.prefix.find("//") != std::string::npos || (!loc.prefix.empty() && loc.prefix[0] == '/'))
    return Status::InvalidArgument("malformed prefix in " + url + ": empty path segment");
  return loc;
}

Result<S3Options> ResolveS3Options(const S3Options& given) {
  S3Options o = given;
  if (o.endpoint.empty()) o.endpoint = GetEnv("AWS_ENDPOINT_URL");
  if (o.region.empty()) o.region = GetEnv("AWS_REGION");
  if (o.region.empty()) o.region = GetEnv("AWS_DEFAULT_REGION");
  if (o.region.empty()) o.region = "us-east-1";
  if (o.access_key.empty()) o.access_key = GetEnv("AWS_ACCESS_KEY_ID");
  if (o.secret_key.empty()) o.secret_key = GetEnv("AWS_SECRET_ACCESS_KEY");
  if (o.session_token.empty()) o.session_token = GetEnv("AWS_SESSION_TOKEN");
  if (o.ca_bundle.empty()) o.ca_bundle = GetEnv("AWS_CA_BUNDLE");
  if (o.ca_bundle.empty()) o.ca_bundle = GetEnv("SSL_CERT_FILE");
  if (o.access_key.empty() || o.secret_key.empty())
    return Status::InvalidArgument(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  if (!o.endpoint.empty() && o.endpoint.rfind("http://", 0) != 0 &&
      o.endpoint.rfind("https://", 0) != 0)
    return Status::InvalidArgument("the S3 endpoint must start with http:// or https:// (got " +
                                   o.endpoint + ")");
  return o;
}

Result<std::unique_ptr<BlobStore>> NewS3BlobStore(const S3Location& where, const S3Options& opts,
                                                  bool create_bucket) {
  CHUNKSTORE_RETURN_IF_ERROR(Curl().status());
  auto store = std::make_unique<S3BlobStore>(where, opts);
  if (create_bucket) CHUNKSTORE_RETURN_IF_ERROR(store->CreateBucketIfMissing());
  return std::unique_ptr<BlobStore>(std::move(store));
}

Result<std::string> StartUpload(BlobStore* s3, const std::string& key) {
  auto* store = dynamic_cast<S3BlobStore*>(s3);
  if (!store) return Status::InvalidArgument("not an S3 blob store");
  return store->BeginUpload(key);
}

}  // namespace chunkstore::internal

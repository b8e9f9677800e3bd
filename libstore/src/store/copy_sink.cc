// SPDX-License-Identifier: Apache-2.0
// The two places a copy writes (copy_sink.h): a publish session on a store
// this process opened, and push streams POSTed to a server.
#include "store/copy_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include "backend/s3/curl_api.h"
#include "format/compress.h"
#include "format/push_format.h"

namespace chunkstore::internal {

namespace {

class SessionSink final : public CopySink {
 public:
  explicit SessionSink(Store::Impl* dst) : dst_(dst) {}

  bool Sent(const Digest&) const override { return false; }  // a commit puts them in the index
  Status Named(const Digest& id) override {
    if (Session().Holds(id)) return Status::OK();
    Result<uint64_t> there = Session().ReuseObject(id);
    if (there.ok()) return Status::OK();
    if (there.status().IsNotFound())
      return Status::Busy("a gc at the destination removed object " + id.ObjectId() +
                          ", which this copy had sent; copy again");
    return there.status();
  }
  Result<bool> AddChunk(const Digest& id, const uint8_t* raw, uint32_t length) override {
    return Session().AddChunk(id, raw, length);
  }
  Status AddWhole(const Digest& id, const std::string& content, const ObjectRole& role) override {
    IngestedChunk c;
    c.id = id;
    c.length = static_cast<uint32_t>(content.size());
    c.data = reinterpret_cast<const uint8_t*>(content.data());
    if (content.size() > dst_->meta.inline_max) {
      c.codec = TryCompress(c.data, c.length, &c.packed, {dst_->meta.compression});
      if (c.codec == Codec::kRaw) c.packed.clear();
    }
    return Session().AddWhole(c, "", role).status();
  }
  Status AddSource(const Digest& id, uint64_t, Source& source, const ObjectRole& role, uint64_t* written,
                   uint64_t* reused) override {
    Result<PublishResult> added = Session().AddSource(source, "", role);
    if (!added.ok()) return added.status();
    if (added->id != id.ObjectId())
      return Status::Corruption("object " + id.ObjectId() + " read back as other content", id.ObjectId());
    *written = added->chunks - added->reused_chunks;
    *reused = added->reused_chunks;
    return Status::OK();
  }
  Status AddObject(const Digest& id, uint64_t size, const Manifest& m, const ObjectRole& role) override {
    return Session().AddObject(id, size, m.entries, m.chain, "", role).status();
  }
  Status AddNameVersion(const std::string& name, const Digest& object, int64_t created) override {
    Session().AddNameVersion(name, object, created);
    return Status::OK();
  }
  uint64_t pending_bytes() const override { return session_ ? session_->written_bytes() : 0; }
  Status Commit(bool* committed) override {
    *committed = false;
    if (!session_) return Status::OK();
    Status s = session_->Commit();
    session_.reset();
    *committed = s.ok();
    return s;
  }

 private:
  PublishSession& Session() {
    if (!session_) session_ = std::make_unique<PublishSession>(dst_->publish_target());
    return *session_;
  }
  Store::Impl* dst_;
  std::unique_ptr<PublishSession> session_;
};

struct Upload {
  std::FILE* f;
  uint64_t size, sent = 0;
  std::string response;
};

size_t ReadUpload(char* buf, size_t size, size_t nmemb, void* user) {
  auto* u = static_cast<Upload*>(user);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(size * nmemb, u->size - u->sent));
  if (n && std::fread(buf, 1, n, u->f) != n) return CURL_READFUNC_ABORT;
  u->sent += n;
  return n;
}

size_t KeepResponse(char* data, size_t size, size_t nmemb, void* user) {
  auto* u = static_cast<Upload*>(user);
  const size_t n = size * nmemb;
  if (u->response.size() < 64 * 1024) u->response.append(data, std::min<size_t>(n, 64 * 1024));
  return n;
}

class PushSink final : public CopySink {
 public:
  explicit PushSink(Store::Impl* dst) : dst_(dst) {}
  ~PushSink() override {
    if (spool_) std::fclose(spool_);
  }

  bool Sent(const Digest& id) const override { return sent_chunks_.count(id) != 0; }
  Status Named(const Digest& id) override {
    if (objects_.count(id) || sent_objects_.count(id)) return Status::OK();
    Result<std::optional<ObjectRow>> row = dst_->index.Lock()->FindObject(id);
    if (!row.ok()) return row.status();
    if (row->has_value()) return Status::OK();  // the server checks again
    return Status::Busy("object " + id.ObjectId() + " is not at " + dst_->dir + " any more; copy again");
  }
  Result<bool> AddChunk(const Digest& id, const uint8_t* raw, uint32_t length) override {
    if (chunks_.count(id) || sent_chunks_.count(id)) return false;
    CHUNKSTORE_RETURN_IF_ERROR(Writer());
    CHUNKSTORE_RETURN_IF_ERROR(w_->Chunk(id, raw, length));
    chunks_.insert(id);
    return true;
  }
  Status AddWhole(const Digest& id, const std::string& content, const ObjectRole& role) override {
    CHUNKSTORE_RETURN_IF_ERROR(Writer());
    objects_.insert(id);
    return w_->Whole(id, Flags(role), content);
  }
  Status AddSource(const Digest& id, uint64_t size, Source& source, const ObjectRole& role, uint64_t*,
                   uint64_t*) override {
    CHUNKSTORE_RETURN_IF_ERROR(Writer());
    CHUNKSTORE_RETURN_IF_ERROR(w_->SourceHeader(id, Flags(role), size));
    std::vector<uint8_t> buf(1 << 20);
    uint64_t total = 0;
    for (;;) {
      Result<size_t> n = source.Read(buf.data(), buf.size());
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      total += *n;
      if (total > size) break;
      CHUNKSTORE_RETURN_IF_ERROR(w_->Raw(buf.data(), *n));
    }
    if (total != size)
      return Status::Corruption("object " + id.ObjectId() + " read back as " + std::to_string(total) + " bytes, not " +
                                    std::to_string(size),
                                id.ObjectId());
    objects_.insert(id);
    return Status::OK();
  }
  Status AddObject(const Digest& id, uint64_t size, const Manifest& m, const ObjectRole& role) override {
    CHUNKSTORE_RETURN_IF_ERROR(Writer());
    objects_.insert(id);
    return w_->Object(id, Flags(role), size, m.entries);
  }
  Status AddNameVersion(const std::string& name, const Digest& object, int64_t created) override {
    CHUNKSTORE_RETURN_IF_ERROR(Writer());
    return w_->Name(name, object, created);
  }
  uint64_t pending_bytes() const override { return w_ ? w_->bytes() : 0; }
  uint64_t requests() const override { return posts_; }
  Status Commit(bool* committed) override {
    *committed = false;
    if (!w_) return Status::OK();
    Status s = Post();
    w_.reset();
    std::fclose(spool_);
    spool_ = nullptr;
    if (s.ok()) {
      sent_chunks_.insert(chunks_.begin(), chunks_.end());
      sent_objects_.insert(objects_.begin(), objects_.end());
      *committed = true;
    }
    chunks_.clear();
    objects_.clear();
    return s;
  }

 private:
  static uint8_t Flags(const ObjectRole& role) {
    return static_cast<uint8_t>((role.member ? kPushMember : 0) | (role.tree ? kPushTree : 0));
  }
  Status Writer() {
    if (w_) return Status::OK();
    // In the store's cache directory, which is on disk, rather than in a
    // /tmp that may be memory: a push holds up to commit_every bytes and
    // the largest object.
    const int fd = ::open(dst_->tmp_dir().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    spool_ = fd >= 0 ? ::fdopen(fd, "w+b") : std::tmpfile();
    if (!spool_) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return Status::IOError(std::string("cannot make a temporary file for a push: ") + std::strerror(err));
    }
    w_ = std::make_unique<PushWriter>(spool_);
    return Status::OK();
  }
  Status Post();

  Store::Impl* dst_;
  std::FILE* spool_ = nullptr;
  std::unique_ptr<PushWriter> w_;
  uint64_t posts_ = 0;
  std::unordered_set<Digest, DigestHash> chunks_, objects_;            // in the push being written
  std::unordered_set<Digest, DigestHash> sent_chunks_, sent_objects_;  // in pushes the server took
};

Status PushSink::Post() {
  CHUNKSTORE_RETURN_IF_ERROR(w_->End());
  const uint64_t size = w_->bytes();
  std::rewind(spool_);
  Result<const CurlApi*> api = Curl();
  if (!api.ok()) return api.status();
  const CurlApi& c = **api;
  CURL* h = c.easy_init();
  if (!h) return Status::IOError("cannot start an HTTP request");
  Upload u{spool_, size, 0, {}};
  curl_slist* headers = nullptr;
  const std::string auth = "Authorization: Bearer " + dst_->options.http_token;
  headers = c.slist_append(headers, auth.c_str());
  headers = c.slist_append(headers, "Content-Type: application/vnd.chunkstore.push");
  // A server that refuses a push by its declared length (serve
  // --max-upload-mib) answers before any of a large one is sent, so the
  // answer is not lost to a connection it closes while the body is still
  // arriving. A small push goes at once: the wait would cost a round trip.
  const bool expect = size > (1u << 20);
  headers = c.slist_append(headers, expect ? "Expect: 100-continue" : "Expect:");
  std::string ca = dst_->options.s3.ca_bundle;
  if (ca.empty()) {
    if (const char* e = std::getenv("AWS_CA_BUNDLE"); e && *e) ca = e;
    else if (const char* e2 = std::getenv("SSL_CERT_FILE"); e2 && *e2) ca = e2;
  }
  c.easy_setopt(h, CURLOPT_URL, dst_->push_url.c_str());
  c.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  c.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  c.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  if (!ca.empty()) c.easy_setopt(h, CURLOPT_CAINFO, ca.c_str());
  if (expect) c.easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 10000L);
  c.easy_setopt(h, CURLOPT_POST, 1L);
  c.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(size));
  c.easy_setopt(h, CURLOPT_READFUNCTION, ReadUpload);
  c.easy_setopt(h, CURLOPT_READDATA, &u);
  c.easy_setopt(h, CURLOPT_WRITEFUNCTION, KeepResponse);
  c.easy_setopt(h, CURLOPT_WRITEDATA, &u);
  ++posts_;  // a request made, whatever becomes of it
  const CURLcode rc = c.easy_perform(h);
  long code = 0;
  c.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  c.easy_cleanup(h);
  c.slist_free_all(headers);
  // A refusal that arrived before the connection broke is the answer. An
  // interim 100 Continue is not an answer: curl records it as the code when
  // the connection breaks after it, and curl's own error says more.
  if (rc != CURLE_OK && (code < 200 || code / 100 == 2))
    return Status::IOError("cannot send a push to " + dst_->push_url + ": " + c.easy_strerror(rc));
  if (code / 100 == 2) return Status::OK();
  std::string why = u.response;
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  const std::string msg = dst_->dir + " refused a push (HTTP " + std::to_string(code) + "): " + why;
  if (code == 401 || code == 403) return Status::PermissionDenied(msg);
  if (code == 405) return Status::InvalidArgument(msg);
  if (code == 503) return Status::Busy(msg);
  if (code == 409) return Status::Busy(msg + " (its store changed since this copy looked; copy again)");
  if (code == 400) return Status::InvalidArgument(msg);
  if (code == 422) return Status::Corruption(msg);
  return Status::IOError(msg);
}

}  // namespace

std::unique_ptr<CopySink> NewSessionSink(Store::Impl* dst) { return std::make_unique<SessionSink>(dst); }
std::unique_ptr<CopySink> NewPushSink(Store::Impl* dst) { return std::make_unique<PushSink>(dst); }

}  // namespace chunkstore::internal

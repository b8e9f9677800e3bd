// SPDX-License-Identifier: Apache-2.0
// MemoryBlobStore: blobs in a map, for tests and examples of bucket stores.
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "chunkstore/blob_store.h"
#include "chunkstore/env.h"

namespace chunkstore {

namespace {

class MemoryBlobStore final : public BlobStore {
 public:
  Status Put(const std::string& key, const void* data, size_t n) override {
    Blob b;
    b.bytes.assign(static_cast<const char*>(data), n);
    b.modified = Now();
    std::lock_guard<std::mutex> l(mu_);
    blobs_[key] = std::make_shared<const Blob>(std::move(b));
    return Status::OK();
  }

  Result<bool> PutIfAbsent(const std::string& key, const void* data, size_t n) override {
    Blob b;
    b.bytes.assign(static_cast<const char*>(data), n);
    b.modified = Now();
    std::lock_guard<std::mutex> l(mu_);
    return blobs_.emplace(key, std::make_shared<const Blob>(std::move(b))).second;
  }

  Status PutFile(const std::string& key, const File& file, uint64_t size) override {
    std::string bytes(size, '\0');
    size_t got = 0;
    CHUNKSTORE_RETURN_IF_ERROR(file.ReadAt(0, size, bytes.data(), &got));
    if (got != size) return Status::IOError("the file to upload is shorter than expected");
    return Put(key, bytes.data(), bytes.size());
  }

  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf,
                  size_t* got) override {
    *got = 0;
    Result<std::shared_ptr<const Blob>> b = Find(key);
    if (!b.ok()) return b.status();
    const std::string& bytes = (*b)->bytes;
    if (offset < bytes.size()) {
      *got = static_cast<size_t>(std::min<uint64_t>(n, bytes.size() - offset));
      std::memcpy(buf, bytes.data() + offset, *got);
    }
    return Status::OK();
  }

  Result<std::string> Get(const std::string& key) override {
    Result<std::shared_ptr<const Blob>> b = Find(key);
    if (!b.ok()) return b.status();
    return (*b)->bytes;
  }

  Result<uint64_t> Size(const std::string& key) override {
    Result<std::shared_ptr<const Blob>> b = Find(key);
    if (!b.ok()) return b.status();
    return static_cast<uint64_t>((*b)->bytes.size());
  }

  Result<std::vector<BlobInfo>> List(const std::string& prefix,
                                     const std::string& start_after) override {
    std::vector<BlobInfo> out;
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = blobs_.lower_bound(prefix); it != blobs_.end(); ++it) {
      if (it->first.compare(0, prefix.size(), prefix) != 0) break;
      if (!start_after.empty() && it->first <= start_after) continue;
      out.push_back({it->first, it->second->bytes.size(), it->second->modified});
    }
    return out;
  }

  Status Delete(const std::string& key) override {
    std::lock_guard<std::mutex> l(mu_);
    blobs_.erase(key);
    return Status::OK();
  }

  std::string Describe() const override { return "memory blob store"; }

 private:
  struct Blob {
    std::string bytes;
    int64_t modified = 0;
  };
  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  Result<std::shared_ptr<const Blob>> Find(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = blobs_.find(key);
    if (it == blobs_.end()) return Status::NotFound("no blob " + key);
    return it->second;
  }

  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const Blob>> blobs_;
};

}  // namespace

std::unique_ptr<BlobStore> NewMemoryBlobStore() { return std::make_unique<MemoryBlobStore>(); }

}  // namespace chunkstore

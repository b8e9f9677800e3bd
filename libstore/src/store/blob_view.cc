// SPDX-License-Identifier: Apache-2.0
// A store seen as a bucket (store.h, Store::OpenBlobView): what `serve`
// gives machines that open it as an http:// store, which are bucket stores
// over that view with caches of their own (docs/format.md, "Bucket
// layout").
//
// A bucket store's view is its bucket, read-only. A directory store's is
// made from its files as they are: its config as a bucket's; its two
// newest log segments, each segment's first frame (a checkpoint) as
// checkpoints/0000000001-<N> with its mark log/0000000001-<N>-checkpoint,
// every later frame as log/0000000001-<N>-<N in hex>, N being the frame's
// change number (in the place a bucket's key has milliseconds, so keys sort
// as the log does); and its packs up to their committed lengths. A cache
// that falls more than a checkpoint behind sees two new marks and starts
// again from the newest, as with any bucket. Nothing in the view can be
// written.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "backend/whole_blob.h"
#include "bucket/log_keys.h"
#include "chunkstore/blob_store.h"
#include "format/change_set.h"
#include "format/config.h"
#include "format/layout.h"
#include "log/segment.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

Status ReadOnly(const std::string& what) {
  return Status::PermissionDenied("the store is served read-only (" + what.substr(0, 128) + ")");
}

// A bucket that refuses writes: a bucket store's own, as `serve` hands it
// out (kept alive by keep_), or an http:// store's, as a client sees it
// (owned), so that a write fails before its first upload.
class ReadOnlyBlobs final : public BlobStore {
 public:
  ReadOnlyBlobs(BlobStore* b, std::shared_ptr<void> keep, std::unique_ptr<BlobStore> owned, std::string why)
      : keep_(std::move(keep)), owned_(std::move(owned)), b_(b), why_(std::move(why)) {}
  Status Put(const std::string& key, const void*, size_t) override { return Refuse(key); }
  Result<bool> PutIfAbsent(const std::string& key, const void*, size_t) override { return Refuse(key); }
  Status PutFile(const std::string& key, const File&, uint64_t) override { return Refuse(key); }
  Status Delete(const std::string& key) override { return Refuse(key); }
  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf, size_t* got) override {
    return b_->GetRange(key, offset, n, buf, got);
  }
  Result<std::string> Get(const std::string& key) override { return b_->Get(key); }
  Result<uint64_t> Size(const std::string& key) override { return b_->Size(key); }
  Result<std::vector<BlobInfo>> List(const std::string& prefix, const std::string& start_after) override {
    return b_->List(prefix, start_after);
  }
  Result<std::vector<UploadInfo>> ListUploads(const std::string& prefix) override { return b_->ListUploads(prefix); }
  std::string Describe() const override { return b_->Describe(); }
  uint64_t requests() const override { return b_->requests(); }

 private:
  Status Refuse(const std::string& key) const {
    return Status::PermissionDenied(why_ + " (cannot write " + key.substr(0, 128) + ")");
  }
  std::shared_ptr<void> keep_;
  std::unique_ptr<BlobStore> owned_;
  BlobStore* b_;
  std::string why_;
};

class DirectoryView final : public BlobStore {
 public:
  explicit DirectoryView(std::shared_ptr<Store::Impl> impl) : impl_(std::move(impl)) {
    StoreConfig c;
    c.bucket = true;
    c.format = kBucketTreeFormat;  // its log keys are time-ordered
    c.id = impl_->store_id;
    c.meta = impl_->meta;
    config_ = EncodeConfig(c);
    ChangeSet mark;
    mark.kind = ChangeSet::kCheckpointMark;
    mark_ = EncodeChangeSet(mark);
  }
  Status Put(const std::string& key, const void*, size_t) override { return ReadOnly(key); }
  Result<bool> PutIfAbsent(const std::string& key, const void*, size_t) override { return ReadOnly(key); }
  Status PutFile(const std::string& key, const File&, uint64_t) override { return ReadOnly(key); }
  Status Delete(const std::string& key) override { return ReadOnly(key); }
  std::string Describe() const override { return impl_->dir; }

  Result<std::string> Get(const std::string& key) override { return GetWholeBlob(*this, key); }

  Result<uint64_t> Size(const std::string& key) override {
    Located l;
    CHUNKSTORE_RETURN_IF_ERROR(Locate(key, &l));
    return l.size;
  }

  Status GetRange(const std::string& key, uint64_t offset, size_t n, void* buf, size_t* got) override {
    *got = 0;
    Located l;
    CHUNKSTORE_RETURN_IF_ERROR(Locate(key, &l));
    if (offset >= l.size) return Status::OK();
    n = static_cast<size_t>(std::min<uint64_t>(n, l.size - offset));
    if (!l.text.empty() || l.size == 0) {
      std::memcpy(buf, l.text.data() + offset, n);
      *got = n;
      return Status::OK();
    }
    if (!l.file) return Status::NotFound("no blob " + key);
    return l.file->ReadAt(l.offset + offset, n, buf, got);
  }

  Result<std::vector<BlobInfo>> List(const std::string& prefix, const std::string& start_after) override {
    std::vector<BlobInfo> all;
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    if (std::string(kConfigFile).rfind(prefix, 0) == 0) all.push_back({kConfigFile, config_.size(), now});
    if (prefix.rfind(kLogPrefix, 0) == 0 || prefix.rfind(kCheckpointPrefix, 0) == 0 || std::string(kLogPrefix).rfind(prefix, 0) == 0 ||
        std::string(kCheckpointPrefix).rfind(prefix, 0) == 0) {
      std::lock_guard<std::mutex> l(mu_);
      CHUNKSTORE_RETURN_IF_ERROR(Scan());
      for (const auto& [seq, f] : frames_) {
        if (f.checkpoint) {
          all.push_back({CheckpointKey(Tail(seq)), f.length, now});
          all.push_back({MarkKey(Tail(seq)), mark_.size(), now});
        } else {
          all.push_back({RecordKey(seq), f.length, now});
        }
      }
    }
    if (prefix.rfind(kPacksDir, 0) == 0 || std::string(kPacksDir).rfind(prefix, 0) == 0) {
      Result<std::vector<PackRow>> packs = impl_->index.Lock()->ListPacks();
      if (!packs.ok()) return packs.status();
      for (const PackRow& p : *packs) all.push_back({PackKey(p.name), p.size, now});
    }
    std::vector<BlobInfo> out;
    for (BlobInfo& b : all)
      if (b.key.rfind(prefix, 0) == 0 && b.key > start_after) out.push_back(std::move(b));
    std::sort(out.begin(), out.end(), [](const BlobInfo& a, const BlobInfo& b) { return a.key < b.key; });
    return out;
  }

 private:
  struct FrameRef {
    std::string segment;
    uint64_t offset = 0;  // of the payload in the segment file
    uint64_t length = 0;
    bool checkpoint = false;
  };
  // Where a key's bytes are: text of its own, or a range of a file.
  struct Located {
    std::string text;
    std::shared_ptr<File> file;
    uint64_t offset = 0, size = 0;
  };

  static std::string Tail(uint64_t seq) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%010d-%013llu", 1, static_cast<unsigned long long>(seq));
    return buf;
  }
  static std::string RecordKey(uint64_t seq) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(seq));
    return kLogPrefix + Tail(seq) + "-" + hex;
  }

  std::string LogDir() const { return impl_->root + "/" + kLogDir; }

  // Brings frames_ up to date with the two newest segments, as far as the
  // index has applied them: a change the index has not applied may name a
  // pack longer than the index knows, and the view serves packs only up to
  // the lengths the index holds.
  Status Scan() {
    CHUNKSTORE_RETURN_IF_ERROR(impl_->log->CatchUp());
    Result<std::string> position = impl_->index.Lock()->GetMeta("log_position");
    if (!position.ok()) return position.status();
    const uint64_t applied = std::strtoull(position->c_str(), nullptr, 10);
    Result<std::vector<std::string>> names = impl_->env->ListDir(LogDir());
    if (!names.ok()) return names.status();
    std::vector<std::pair<uint64_t, std::string>> segments;
    for (const std::string& n : *names) {
      uint64_t first = 0;
      if (IsSegmentName(n, &first)) segments.emplace_back(first, n);
    }
    std::sort(segments.begin(), segments.end());
    if (segments.size() > 2) segments.erase(segments.begin(), segments.end() - 2);
    std::map<uint64_t, FrameRef> frames;
    for (const auto& [first, name] : segments) {
      const std::string path = LogDir() + "/" + name;
      Result<std::unique_ptr<File>> f = impl_->env->OpenFile(path, OpenMode::kRead);
      if (!f.ok()) {
        if (f.status().IsNotFound()) continue;  // dropped by a checkpoint meanwhile
        return f.status();
      }
      Result<uint64_t> size = (*f)->Size();
      if (!size.ok()) return size.status();
      auto& seen = scanned_[name];
      if (seen.first != *size) {
        Result<SegmentScan> scan = ScanSegment(**f, name);
        if (!scan.ok()) return scan.status();
        if (!scan->damage.empty() && !scan->damage_at_end)
          return Status::Corruption("the store's log is damaged (" + scan->damage + "); it cannot be served");
        seen.second.clear();
        for (const Frame& fr : scan->frames) {
          FrameRef r;
          r.segment = name;
          r.offset = fr.end - fr.payload.size();
          r.length = fr.payload.size();
          Result<ChangeSet> c = DecodeChangeSet(fr.payload);
          if (!c.ok()) return c.status().WithContext("change " + std::to_string(fr.seq) + " of " + name);
          r.checkpoint = c->kind == ChangeSet::kCheckpoint;
          seen.second.emplace_back(fr.seq, r);
        }
        seen.first = *size;
      }
      for (const auto& [seq, r] : seen.second)
        if (seq <= applied) frames[seq] = r;
    }
    for (auto it = scanned_.begin(); it != scanned_.end();) {
      const bool kept = std::any_of(segments.begin(), segments.end(), [&](const auto& s) { return s.second == it->first; });
      it = kept ? std::next(it) : scanned_.erase(it);
    }
    frames_ = std::move(frames);
    return Status::OK();
  }

  Status Locate(const std::string& key, Located* l) {
    if (key == kConfigFile) {
      l->text = config_;
      l->size = config_.size();
      return Status::OK();
    }
    if (key.rfind(std::string(kPacksDir) + "/", 0) == 0) {
      const std::string name = key.substr(std::char_traits<char>::length(kPacksDir) + 1);
      if (!IsPackName(name)) return Status::NotFound("no blob " + key.substr(0, 128));
      Result<std::optional<PackRow>> row = impl_->index.Lock()->FindPackByName(name);
      if (!row.ok()) return row.status();
      if (!row->has_value()) return Status::NotFound("no blob " + key);
      Result<std::unique_ptr<File>> f = impl_->packs->Open(name, (*row)->size);
      if (!f.ok()) return f.status();
      l->file = std::move(*f);
      l->size = (*row)->size;  // what is past the committed length is nobody's yet
      return Status::OK();
    }
    std::lock_guard<std::mutex> lock(mu_);
    CHUNKSTORE_RETURN_IF_ERROR(Scan());
    int64_t epoch = 0, seq = 0;
    bool is_checkpoint = false;
    if (key.rfind(kCheckpointPrefix, 0) == 0) {
      const std::string tail = CheckpointTail(key);
      if (tail.empty() || !ParseLogKey(kLogPrefix + tail + "-x", &epoch, &seq)) return Status::NotFound("no blob " + key);
      is_checkpoint = true;
    } else if (!IsLogKey(key, false) || !ParseLogKey(key, &epoch, &seq)) {
      return Status::NotFound("no blob " + key.substr(0, 128));
    }
    auto it = frames_.find(static_cast<uint64_t>(seq));
    if (epoch != 1 || it == frames_.end()) return Status::NotFound("no blob " + key);
    const FrameRef& f = it->second;
    if (IsCheckpointMark(key)) {
      if (!f.checkpoint) return Status::NotFound("no blob " + key);
      l->text = mark_;
      l->size = mark_.size();
      return Status::OK();
    }
    if (is_checkpoint != f.checkpoint || (!is_checkpoint && key != RecordKey(it->first)))
      return Status::NotFound("no blob " + key);
    Result<std::unique_ptr<File>> file = impl_->env->OpenFile(LogDir() + "/" + f.segment, OpenMode::kRead);
    if (!file.ok()) return file.status().IsNotFound() ? Status::NotFound("no blob " + key) : file.status();
    l->file = std::move(*file);
    l->offset = f.offset;
    l->size = f.length;
    return Status::OK();
  }

  std::shared_ptr<Store::Impl> impl_;
  std::string config_, mark_;
  std::mutex mu_;
  std::map<std::string, std::pair<uint64_t, std::vector<std::pair<uint64_t, FrameRef>>>> scanned_;  // by segment
  std::map<uint64_t, FrameRef> frames_;  // by change number
};

}  // namespace

std::unique_ptr<BlobStore> internal::NewReadOnlyBlobStore(std::unique_ptr<BlobStore> inner, std::string why) {
  BlobStore* b = inner.get();
  return std::unique_ptr<BlobStore>(new ReadOnlyBlobs(b, nullptr, std::move(inner), std::move(why)));
}

Result<std::unique_ptr<BlobStore>> Store::OpenBlobView() {
  if (impl_->blobs)
    return std::unique_ptr<BlobStore>(new ReadOnlyBlobs(impl_->blobs, impl_, nullptr, "the store is served read-only"));
  if (impl_->dir.empty()) return Status::Unsupported("an in-memory store has no files to serve");
  return std::unique_ptr<BlobStore>(new DirectoryView(impl_));
}

}  // namespace chunkstore

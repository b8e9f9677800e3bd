// SPDX-License-Identifier: Apache-2.0
// The in-memory Env: a map from path to a file's bytes (MemData), for
// in-memory stores and for tests that must not touch the disk.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "base/buffer.h"
#include "base/clock.h"
#include "chunkstore/env.h"

namespace chunkstore {

namespace {

// A file's bytes, kept in segments that never move once written: a
// contiguous array would copy a growing pack at every doubling and fault
// in fresh memory for each copy, which made publishing into an in-memory
// store slower than onto the disk. A new segment is as large as the file
// so far (64 KiB at least, 8 MiB at most), so small files stay small and a
// large one has few segments.
struct MemData {
  struct Segment {
    uint64_t start;  // file offset of the segment's first byte
    size_t capacity;
    internal::ChunkMemory bytes;
  };
  mutable std::mutex mu;
  std::vector<Segment> segments;
  uint64_t size = 0;
  int64_t modified = internal::NowSeconds();  // set at creation and by every change

  // The segment holding offset `at` (< the end of the last segment).
  size_t SegmentAt(uint64_t at) const {
    auto it = std::upper_bound(segments.begin(), segments.end(), at,
                               [](uint64_t o, const Segment& seg) { return o < seg.start; });
    return static_cast<size_t>(it - segments.begin()) - 1;
  }

  // Writes n bytes at `at` (<= size), adding segments as needed; p null
  // writes zeros.
  void Write(uint64_t at, const uint8_t* p, size_t n) {
    while (n > 0) {
      const uint64_t end = segments.empty() ? 0 : segments.back().start + segments.back().capacity;
      if (at == end) {
        constexpr size_t kMin = 64 << 10, kMax = 8 << 20;
        const size_t cap = static_cast<size_t>(std::clamp<uint64_t>(end, kMin, kMax));
        segments.push_back({end, cap, internal::AllocateChunkMemory(cap)});
      }
      Segment& seg = segments[SegmentAt(at)];
      const size_t within = static_cast<size_t>(at - seg.start);
      const size_t take = std::min(n, seg.capacity - within);
      if (p) {
        std::memcpy(seg.bytes.get() + within, p, take);
        p += take;
      } else {
        std::memset(seg.bytes.get() + within, 0, take);
      }
      at += take;
      n -= take;
    }
    size = std::max(size, at);
  }
};

class MemFile final : public File {
 public:
  explicit MemFile(std::shared_ptr<MemData> data) : data_(std::move(data)) {}

  Status Append(const void* data, size_t n) override {
    std::lock_guard<std::mutex> l(data_->mu);
    data_->Write(data_->size, static_cast<const uint8_t*>(data), n);
    data_->modified = internal::NowSeconds();
    return Status::OK();
  }
  Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const override {
    std::lock_guard<std::mutex> l(data_->mu);
    const uint64_t size = data_->size;
    const size_t count = offset >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size - offset));
    auto* out = static_cast<uint8_t*>(buf);
    for (size_t done = 0; done < count;) {
      const MemData::Segment& seg = data_->segments[data_->SegmentAt(offset + done)];
      const size_t within = static_cast<size_t>(offset + done - seg.start);
      const size_t take = std::min(count - done, seg.capacity - within);
      std::memcpy(out + done, seg.bytes.get() + within, take);
      done += take;
    }
    *got = count;
    return Status::OK();
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> l(data_->mu);
    data_->modified = internal::NowSeconds();
    if (size > data_->size) {
      data_->Write(data_->size, nullptr, static_cast<size_t>(size - data_->size));  // grows with zeros
    } else {
      data_->size = size;
      // Segments wholly past the end go; later writes overwrite the rest.
      while (!data_->segments.empty() && data_->segments.back().start >= size) data_->segments.pop_back();
    }
    return Status::OK();
  }
  Result<uint64_t> Size() const override {
    std::lock_guard<std::mutex> l(data_->mu);
    return data_->size;
  }

 private:
  std::shared_ptr<MemData> data_;
};

class MemEnv;

class MemLock final : public FileLock {
 public:
  MemLock(MemEnv* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~MemLock() override;

 private:
  MemEnv* env_;
  std::string path_;
};

class MemEnv final : public Env {
 public:
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(path);
    if (mode == OpenMode::kCreateNew) {
      if (it != files_.end()) return Status::IOError("cannot create " + path + ": file exists");
      auto data = std::make_shared<MemData>();
      files_[path] = data;
      return std::unique_ptr<File>(new MemFile(data));
    }
    if (it == files_.end()) return Status::NotFound("no such file " + path);
    return std::unique_ptr<File>(new MemFile(it->second));
  }

  Result<std::unique_ptr<File>> CreateTempFile(const std::string&) override {
    return std::unique_ptr<File>(new MemFile(std::make_shared<MemData>()));
  }

  Status CreateDir(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    if (files_.count(path)) return Status::IOError(path + " exists and is not a directory");
    dirs_.insert(path);
    return Status::OK();
  }
  bool FileExists(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    return files_.count(path) || dirs_.count(path);
  }
  bool IsDirectory(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    return dirs_.count(path) != 0;
  }
  Result<std::vector<std::string>> ListDir(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    if (!dirs_.count(path)) return Status::NotFound("no such directory " + path);
    std::vector<std::string> out;
    const std::string prefix = path + "/";
    auto collect = [&](const std::string& p) {
      if (p.compare(0, prefix.size(), prefix) == 0 && p.find('/', prefix.size()) == std::string::npos)
        out.push_back(p.substr(prefix.size()));
    };
    for (const auto& [p, d] : files_) collect(p);
    for (const auto& p : dirs_) collect(p);
    return out;
  }
  Result<FileInfo> GetFileInfo(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound("no such file " + path);
    FileInfo info;
    std::lock_guard<std::mutex> d(it->second->mu);
    info.size = it->second->size;
    info.modified = it->second->modified;
    return info;
  }
  Status RemoveFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    if (files_.erase(path) == 0) return Status::NotFound("no such file " + path);
    return Status::OK();
  }
  Status RemoveDir(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string inside = path + "/";
    for (const auto& [name, file] : files_)
      if (name.rfind(inside, 0) == 0) return Status::IOError("cannot remove directory " + path + ": not empty");
    for (const auto& d : dirs_)
      if (d.rfind(inside, 0) == 0) return Status::IOError("cannot remove directory " + path + ": not empty");
    if (dirs_.erase(path) == 0) return Status::NotFound("no such directory " + path);
    return Status::OK();
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) return Status::NotFound("no such file " + from);
    files_[to] = it->second;
    files_.erase(from);
    return Status::OK();
  }
  Status SyncDir(const std::string&) override { return Status::OK(); }

  // Locks belong to the file, not its name (as flock's do): a renamed
  // file stays locked.
  bool LocksAreExact(const std::string&) override { return true; }  // one process, one table of locks
  Result<std::unique_ptr<FileLock>> TryLockFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    const std::string key = LockKey(path);
    if (locks_.count(key)) return Status::Busy(path + " is locked by another writer");
    locks_.insert(key);
    return std::unique_ptr<FileLock>(new MemLock(this, key));
  }
  Result<std::unique_ptr<FileLock>> LockFile(const std::string& path) override {
    std::unique_lock<std::mutex> l(mu_);
    const std::string key = LockKey(path);
    unlocked_.wait(l, [&] { return locks_.count(key) == 0; });
    locks_.insert(key);
    return std::unique_ptr<FileLock>(new MemLock(this, key));
  }

  void Unlock(const std::string& key) {
    std::lock_guard<std::mutex> l(mu_);
    locks_.erase(key);
    unlocked_.notify_all();
  }

 private:
  std::string LockKey(const std::string& path) {  // mu_ held
    auto it = files_.find(path);
    if (it == files_.end()) return "name:" + path;
    return "file:" + std::to_string(reinterpret_cast<uintptr_t>(it->second.get()));
  }

  std::mutex mu_;
  std::condition_variable unlocked_;
  std::map<std::string, std::shared_ptr<MemData>> files_;
  std::set<std::string> dirs_;
  std::set<std::string> locks_;
};

MemLock::~MemLock() { env_->Unlock(path_); }

}  // namespace

std::unique_ptr<Env> Env::NewMemory() { return std::make_unique<MemEnv>(); }

}  // namespace chunkstore

// The in-memory Env: a map from path to byte vector, for in-memory stores
// and for tests that must not touch the disk.
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "chunkstore/env.h"

namespace chunkstore {

namespace {

struct MemData {
  mutable std::mutex mu;
  std::vector<uint8_t> bytes;
};

class MemFile final : public File {
 public:
  explicit MemFile(std::shared_ptr<MemData> data) : data_(std::move(data)) {}

  Status Append(const void* data, size_t n) override {
    std::lock_guard<std::mutex> l(data_->mu);
    const auto* p = static_cast<const uint8_t*>(data);
    data_->bytes.insert(data_->bytes.end(), p, p + n);
    return Status::OK();
  }
  Status ReadAt(uint64_t offset, size_t n, void* buf, size_t* got) const override {
    std::lock_guard<std::mutex> l(data_->mu);
    const uint64_t size = data_->bytes.size();
    const size_t count = offset >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size - offset));
    if (count) std::memcpy(buf, data_->bytes.data() + offset, count);
    *got = count;
    return Status::OK();
  }
  Status Sync() override { return Status::OK(); }
  Status Truncate(uint64_t size) override {
    std::lock_guard<std::mutex> l(data_->mu);
    data_->bytes.resize(size);
    return Status::OK();
  }
  Result<uint64_t> Size() const override {
    std::lock_guard<std::mutex> l(data_->mu);
    return static_cast<uint64_t>(data_->bytes.size());
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
  Status RemoveFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    if (files_.erase(path) == 0) return Status::NotFound("no such file " + path);
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

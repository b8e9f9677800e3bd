// SPDX-License-Identifier: Apache-2.0
// FaultEnv: an Env wrapper for tests that fails the Nth mutating file
// operation (append, sync, truncate, open, rename, dir sync) with EIO or
// ENOSPC, can make an append short (half written, then failing), can
// "crash" (fail every operation from the Nth on), and can simulate power
// loss (DropUnsyncedData) the way a real file system loses it, or kill
// its process with SIGKILL just before the Nth operation (KillAt).
//
// The power-loss model follows files, not names. Every file and directory
// this Env creates or opens is a node with the bytes that are durable (its
// length at its last Sync) and the name under which it survives (the name
// its parent directory held when that directory was last synced, or none
// for an entry never synced). A rename moves the node and its synced bytes
// to the new name, but the new name only survives once the directory is
// synced; until then power loss puts the file back under its old name (or
// drops it, if that name was never durable either). A file removed, or
// replaced by a rename, comes back at power loss if its directory was not
// synced since. New directories vanish, with everything in them, unless
// their parent was synced after they were made. Files this Env never saw
// (the SQLite index, test fixtures) are taken to be durable as they are.
#pragma once

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chunkstore/env.h"

namespace chunkstore::testing {

class FaultEnv : public EnvWrapper {
 public:
  explicit FaultEnv(Env* target) : EnvWrapper(target) {}

  // Fails the n-th mutating operation from now on (1-based); 0 disarms.
  void FailAt(int n, bool no_space = false, bool short_write = false) {
    count_ = 0;
    fail_at_ = n;
    {
      std::lock_guard<std::mutex> l(mu_);
      failed_op_.clear();
    }
    no_space_ = no_space;
    short_write_ = short_write;
    crash_ = false;
    kill_at_ = 0;
  }
  // A disk with no room left, from now until Full(false): every write and
  // every new file fails with ENOSPC, and FreeSpace says 0.
  void Full(bool on) { full_ = on; }

  // Fails the n-th operation and every one after it, as a crashed process
  // would stop doing anything.
  void CrashAt(int n) {
    FailAt(n);
    crash_ = true;
  }
  // Kills this process with SIGKILL just before the n-th operation, as
  // kill -9 would: what it wrote stays in the page cache, nothing after.
  void KillAt(int n) {
    FailAt(0);
    kill_at_ = n;
  }

  // Power loss: every file goes back to its durable name (or away, if it
  // has none) and its durable length; removed and replaced files whose
  // removal was not made durable come back; directories never made
  // durable disappear. Files must be closed (Stores destroyed) first.
  void DropUnsyncedData() {
    std::lock_guard<std::mutex> l(mu_);
    namespace fs = std::filesystem;
    std::error_code ec;
    // Entries that were never durable go first, so names they took can be
    // given back to the files that held them before.
    std::vector<std::string> gone_dirs;
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      const Node& n = *it->second;
      if (n.durable_path.empty()) {
        fs::remove_all(n.path, ec);
        if (n.dir) gone_dirs.push_back(n.path + "/");
        it = nodes_.erase(it);
      } else {
        ++it;
      }
    }
    // Whatever lived in a vanished directory vanished with it.
    std::erase_if(nodes_, [&](const auto& e) {
      for (const std::string& d : gone_dirs)
        if (e.second->path.rfind(d, 0) == 0 || e.second->durable_path.rfind(d, 0) == 0) return true;
      return false;
    });
    std::erase_if(ghosts_, [&](const Ghost& g) {
      for (const std::string& d : gone_dirs)
        if (g.path.rfind(d, 0) == 0) return true;
      return false;
    });
    std::vector<std::shared_ptr<Node>> moved;
    for (auto& [path, node] : nodes_)
      if (node->path != node->durable_path) moved.push_back(node);
    for (auto& node : moved) {
      // Out of the way first: two files may swap names.
      const std::string aside = node->path + ".power-loss-" + std::to_string(reinterpret_cast<uintptr_t>(node.get()));
      fs::rename(node->path, aside, ec);
      node->path = aside;
    }
    for (auto& node : moved) {
      fs::rename(node->path, node->durable_path, ec);
      node->path = node->durable_path;
    }
    for (auto& [path, node] : nodes_)
      if (!node->dir && !node->foreign && fs::is_regular_file(node->path, ec) && fs::file_size(node->path, ec) > node->synced)
        fs::resize_file(node->path, node->synced, ec);
    for (const Ghost& g : ghosts_) {
      if (fs::exists(g.path, ec)) continue;
      auto f = target()->OpenFile(g.path, OpenMode::kCreateNew);
      if (f.ok()) (*f)->Append(g.bytes.data(), g.bytes.size());
    }
    ghosts_.clear();
    // What is left is durable; the next power loss starts from here.
    std::map<std::string, std::shared_ptr<Node>> again;
    for (auto& [path, node] : nodes_) {
      node->path = node->durable_path;
      again[node->path] = node;
    }
    nodes_ = std::move(again);
  }

  // What FreeSpace reports from now on (UINT64_MAX: the real answer).
  void SetFreeSpace(uint64_t bytes) { free_space_ = bytes; }
  uint64_t FreeSpace(const std::string& path) override {
    if (full_) return 0;
    return free_space_ == UINT64_MAX ? EnvWrapper::FreeSpace(path) : free_space_.load();
  }

  int count() const { return count_; }
  bool fired() const { return fired_; }
  // The operation FailAt's n-th was, once it failed ("write", "sync", ...).
  std::string failed_op() {
    std::lock_guard<std::mutex> l(mu_);
    return failed_op_;
  }

  // Counts one operation; returns the error when it is the one to fail.
  Status Tick(const std::string& what) {
    // A full disk refuses new bytes and new files; opening, renaming,
    // truncating and syncing what is there still work.
    if (full_ && (what.rfind("write", 0) == 0 || what.rfind("create", 0) == 0))
      return Status::NoSpace("cannot " + what + ": the disk is full (injected)");
    const int n = ++count_;
    if (kill_at_ != 0 && n == kill_at_) ::raise(SIGKILL);
    if (std::getenv("FAULT_TRACE")) std::fprintf(stderr, "op %d: %s%s\n", n, what.c_str(), fail_at_ && n >= fail_at_ ? " FAIL" : "");
    if (fail_at_ != 0 && (n == fail_at_ || (crash_ && n > fail_at_))) {
      if (n == fail_at_) {
        std::lock_guard<std::mutex> l(mu_);
        failed_op_ = what;
      }
      fired_ = true;
      return no_space_ ? Status::NoSpace("cannot " + what + ": the disk is full (injected)")
                       : Status::IOError("cannot " + what + ": Input/output error (injected)");
    }
    return Status::OK();
  }
  bool short_write() const { return short_write_; }

  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<File>> CreateTempFile(const std::string& dir) override;

  Status CreateDir(const std::string& path) override {
    const bool existed = target()->IsDirectory(path);
    CHUNKSTORE_RETURN_IF_ERROR(EnvWrapper::CreateDir(path));
    std::lock_guard<std::mutex> l(mu_);
    if (!existed && !nodes_.count(path)) nodes_[path] = std::make_shared<Node>(Node{path, "", 0, true, {}, false});
    return Status::OK();
  }

  Status RemoveFile(const std::string& path) override {
    std::lock_guard<std::mutex> l(mu_);
    std::shared_ptr<Node> node = NodeAt(path);
    CHUNKSTORE_RETURN_IF_ERROR(EnvWrapper::RemoveFile(path));
    if (node) {
      Bury(*node);
      nodes_.erase(path);
    }
    return Status::OK();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("rename"));
    std::lock_guard<std::mutex> l(mu_);
    std::shared_ptr<Node> moving = NodeAt(from);
    std::shared_ptr<Node> replaced = NodeAt(to);
    if (replaced) ReadSynced(*replaced);  // its bytes, while they are still there
    CHUNKSTORE_RETURN_IF_ERROR(EnvWrapper::RenameFile(from, to));
    if (replaced) {
      Bury(*replaced);
      nodes_.erase(to);
    }
    if (moving) {
      nodes_.erase(from);
      moving->path = to;
      nodes_[to] = moving;
    }
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override {
    CHUNKSTORE_RETURN_IF_ERROR(Tick("sync directory"));
    CHUNKSTORE_RETURN_IF_ERROR(EnvWrapper::SyncDir(path));
    std::lock_guard<std::mutex> l(mu_);
    for (auto& [p, node] : nodes_) {
      if (Parent(node->path) == path) node->durable_path = node->path;
      else if (Parent(node->durable_path) == path) node->durable_path.clear();  // moved away
    }
    std::erase_if(ghosts_, [&](const Ghost& g) { return Parent(g.path) == path; });
    return Status::OK();
  }

 private:
  friend class FaultFile;
  struct Node {
    std::string path;          // where it is now
    std::string durable_path;  // where power loss leaves it ("" = gone)
    uint64_t synced = 0;       // bytes that survive power loss
    bool dir = false;
    std::string saved;         // its synced bytes, read just before a rename replaced it
    // Written by someone else (SQLite): its bytes are durable whenever they
    // are there, so power loss moves it but never cuts it.
    bool foreign = false;         // its synced bytes, read just before a rename replaced it
  };
  // A removed file that power loss would bring back.
  struct Ghost {
    std::string path;
    std::string bytes;
  };

  static std::string Parent(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash);
  }

  // The node at path; a file that exists but was never seen through this
  // Env is taken to be durable as it is. Called with mu_ held.
  std::shared_ptr<Node> NodeAt(const std::string& path) {
    auto it = nodes_.find(path);
    if (it != nodes_.end()) return it->second;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return nullptr;
    const bool dir = std::filesystem::is_directory(path, ec);
    const uint64_t size = dir ? 0 : std::filesystem::file_size(path, ec);
    auto node = std::make_shared<Node>(Node{path, path, size, dir, {}, true});
    nodes_[path] = node;
    return node;
  }

  void ReadSynced(Node& n) {
    if (n.dir || n.durable_path.empty()) return;
    auto f = target()->OpenFile(n.path, OpenMode::kRead);
    if (!f.ok()) return;
    if (n.foreign) {
      auto size = (*f)->Size();
      n.synced = size.ok() ? *size : 0;
    }
    n.saved.resize(n.synced);
    size_t got = 0;
    if (!(*f)->ReadAt(0, n.saved.size(), n.saved.data(), &got).ok()) got = 0;
    n.saved.resize(got);
  }

  // A node leaves the name space; if its entry was durable, power loss
  // brings its synced bytes back there.
  void Bury(Node& n) {
    if (n.dir || n.durable_path.empty()) return;
    if (n.saved.empty() && (n.synced > 0 || n.foreign)) ReadSynced(n);
    ghosts_.push_back({n.durable_path, std::move(n.saved)});
  }

  void Opened(const std::string& path, bool created) {
    std::lock_guard<std::mutex> l(mu_);
    if (created) {
      nodes_[path] = std::make_shared<Node>(Node{path, "", 0, false, {}, false});
      return;
    }
    // What was there when this Env first opened it is durable; what is
    // written through it from now on is durable only once synced.
    std::shared_ptr<Node> n = NodeAt(path);
    if (n && n->foreign) {
      std::error_code ec;
      n->synced = std::filesystem::file_size(path, ec);
      n->foreign = false;
    }
  }
  std::shared_ptr<Node> Find(const std::string& path) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = nodes_.find(path);
    return it == nodes_.end() ? nullptr : it->second;
  }
  void Synced(Node& n, uint64_t size) {
    std::lock_guard<std::mutex> l(mu_);
    n.synced = size;
  }
  void Truncated(Node& n, uint64_t size) {
    std::lock_guard<std::mutex> l(mu_);
    if (n.synced > size) n.synced = size;
  }

  std::atomic<int> count_{0};
  int fail_at_ = 0;
  std::atomic<uint64_t> free_space_{UINT64_MAX};
  std::atomic<bool> full_{false};
  std::string failed_op_;
  int kill_at_ = 0;
  bool no_space_ = false;
  bool short_write_ = false;
  bool crash_ = false;
  bool fired_ = false;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> nodes_;  // by current path
  std::vector<Ghost> ghosts_;
};

class FaultFile : public File {
 public:
  // node is null for anonymous temporary files, which power loss ignores.
  FaultFile(FaultEnv* env, std::unique_ptr<File> f, std::shared_ptr<FaultEnv::Node> node)
      : env_(env), f_(std::move(f)), node_(std::move(node)) {}
  Status Append(const void* data, size_t n) override {
    Status s = env_->Tick("write");
    if (!s.ok()) {
      if (env_->short_write() && n > 1) f_->Append(data, n / 2);  // torn write, then the error
      return s;
    }
    return f_->Append(data, n);
  }
  Status ReadAt(uint64_t off, size_t n, void* buf, size_t* got) const override {
    return f_->ReadAt(off, n, buf, got);
  }
  Status Sync() override {
    CHUNKSTORE_RETURN_IF_ERROR(env_->Tick("sync"));
    CHUNKSTORE_RETURN_IF_ERROR(f_->Sync());
    auto size = f_->Size();
    if (node_ && size.ok()) env_->Synced(*node_, *size);
    return Status::OK();
  }
  void StartWriteBack() override { f_->StartWriteBack(); }
  Status Truncate(uint64_t size) override {
    CHUNKSTORE_RETURN_IF_ERROR(env_->Tick("truncate"));
    CHUNKSTORE_RETURN_IF_ERROR(f_->Truncate(size));
    if (node_) env_->Truncated(*node_, size);  // a longer cut is not durable until the next Sync
    return Status::OK();
  }
  Result<uint64_t> Size() const override { return f_->Size(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<File> f_;
  std::shared_ptr<FaultEnv::Node> node_;
};

inline Result<std::unique_ptr<File>> FaultEnv::CreateTempFile(const std::string& dir) {
  CHUNKSTORE_RETURN_IF_ERROR(Tick("create a temporary file"));
  Result<std::unique_ptr<File>> f = EnvWrapper::CreateTempFile(dir);
  if (!f.ok()) return f.status();
  return std::unique_ptr<File>(new FaultFile(this, std::move(*f), nullptr));
}

inline Result<std::unique_ptr<File>> FaultEnv::OpenFile(const std::string& path, OpenMode mode) {
  CHUNKSTORE_RETURN_IF_ERROR(Tick(mode == OpenMode::kCreateNew ? "create " + path : "open " + path));
  Result<std::unique_ptr<File>> f = EnvWrapper::OpenFile(path, mode);
  if (!f.ok()) return f.status();
  Opened(path, mode == OpenMode::kCreateNew);
  return std::unique_ptr<File>(new FaultFile(this, std::move(*f), Find(path)));
}

}  // namespace chunkstore::testing

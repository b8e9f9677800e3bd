// SPDX-License-Identifier: Apache-2.0
// The walk of a directory that Batch::AddTree publishes as a tree
// (tree_publish.cc): every entry below the root, stat'ed, checked and put
// in the order a tree keeps, with the files whose content is still to be
// published (or vouched for by the stat cache).
//
// Directories are listed by a few threads at once (a walk of a large tree
// is mostly the kernel's stat work, which two cores share), and the
// listings are taken in depth-first order on the calling thread, so the
// result, the skipped-entry callbacks and the first error reported are
// those of a walk on one thread.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/buffer.h"
#include "chunkstore/status.h"
#include "chunkstore/tree.h"
#include "format/tree.h"
#include "index/index.h"

namespace chunkstore::internal {

// One directory of the walk.
struct DirNode {
  std::string path;   // as the caller can open it: the root as given, then "/name" per level
  size_t parent = SIZE_MAX;
  size_t slot = 0;    // its entry in the parent's tree
  TreeData tree;
};

// A file whose content is still to be published (or vouched for).
struct FileJob {
  size_t dir;
  size_t slot;
  Index::StatEntry stamp;  // what the walk saw, path absolute
  bool cacheable = false;  // not "racy": may be recorded in the stat cache
};

class TreeWalker {
 public:
  // store_root: the store's directory, which is never walked into ("" for
  // none); threads: how many list directories at once (at least one).
  // options.skipped is called on the caller's thread, and result's
  // counters are filled in, as Run goes.
  TreeWalker(std::string store_root, unsigned threads, const TreePublishOptions& options, TreePublishResult* result);
  ~TreeWalker();
  TreeWalker(const TreeWalker&) = delete;
  TreeWalker& operator=(const TreeWalker&) = delete;

  // Starts walking dir (once): checks the root and starts the listers,
  // then returns for the caller to do other work meanwhile.
  Status Start(const std::string& dir);
  // Takes the listings in order, calling options.skipped as it goes, and
  // stops the listers. Symlinks are recorded, never followed.
  Status Finish();
  // Every directory, the root first, each before what it holds.
  std::vector<DirNode>& dirs() { return dirs_; }
  HugePageVector<FileJob>& files() { return files_; }

 private:
  // One directory's entries as a lister found them, for Take to put in
  // place in depth-first order. Written by one lister, read by the caller
  // once done is set (both under mu_).
  struct Listing {
    bool done = false;
    Status status;  // the first failure; what came before it is kept
    std::vector<TreeNode> entries;
    std::vector<std::pair<size_t, FileJob>> files;              // slot, job (dir left to Take)
    std::vector<std::pair<std::string, std::string>> skipped;   // path, why, in the order met
    uint64_t symlinks = 0;
    struct Sub {
      size_t slot = 0;
      Status status;  // its own stat failed
      uint32_t mode = 0;
      int64_t mtime_ns = 0;
      int fd = -1;                 // open, until queued: then its task's
      Listing* listing = nullptr;  // set when it is queued
    };
    std::vector<Sub> subdirs;
  };
  // A directory to list: its open descriptor (the task owns it).
  struct Task {
    int fd = -1;
    Listing* listing = nullptr;
    std::string path;
    int depth = 0;
  };

  void Work();
  void List(Task& t);
  Status Take(Listing* listing, size_t node);
  void Skip(const std::string& path, const std::string& why) {
    ++result_->skipped;
    if (options_.skipped) options_.skipped(path, why);
  }
  void Stop();

  const std::string store_root_;
  const unsigned threads_;
  const TreePublishOptions& options_;
  TreePublishResult* result_;
  std::vector<DirNode> dirs_;
  HugePageVector<FileJob> files_;
  // Set before the listers start, read-only after.
  std::string root_path_;  // the root as given
  std::string root_abs_;   // the root's absolute path, for the stat cache
  int64_t racy_from_ns_ = 0;
  dev_t store_dev_ = 0;
  ino_t store_ino_ = 0;
  bool have_store_ = false;

  std::mutex mu_;
  std::condition_variable work_cv_;  // a task was added, or the walk ends
  std::condition_variable done_cv_;  // a listing is done
  std::vector<Task> stack_;          // last in, first out: the frontier stays small, as a walk's does
  std::deque<Listing> listings_;     // stable addresses
  Listing* top_ = nullptr;           // the root's, from Start to Finish
  bool stop_ = false;
  Listing* awaited_ = nullptr;       // the listing Take waits for
  unsigned idle_ = 0;                // listers waiting for a task
  std::vector<std::thread> listers_;
};

}  // namespace chunkstore::internal

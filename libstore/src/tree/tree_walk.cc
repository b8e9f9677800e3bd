// SPDX-License-Identifier: Apache-2.0
// The walk of a directory published as a tree (tree_walk.h).
//
// Listers work on directory descriptors: every name is stat'ed with
// fstatat(AT_SYMLINK_NOFOLLOW) and every subdirectory opened with openat
// and O_NOFOLLOW relative to its parent's descriptor, so a symlink below
// the root is recorded as a link and never followed, whichever thread meets
// it. A listing opens its subdirectories' descriptors and hands each to the
// task that lists it; the tasks form a stack, so the listers go depth first
// and hold about as many descriptors open as a walk on one thread would.
//
// The caller's thread takes the listings in depth-first order, waiting for
// each as needed, and is the only one to touch the result, the callbacks
// and dirs_/files_: the walk's outcome, to its first error, does not depend
// on how the listers were scheduled. After an error (or at the end) the
// listers stop, closing the descriptors of tasks they will not run.
#include "tree/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "tree/fs.h"

namespace chunkstore::internal {

TreeWalker::TreeWalker(std::string store_root, unsigned threads, const TreePublishOptions& options,
                       TreePublishResult* result)
    : store_root_(std::move(store_root)), threads_(std::max(1u, threads)), options_(options), result_(result) {}

TreeWalker::~TreeWalker() { Stop(); }

void TreeWalker::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : listers_) t.join();
  listers_.clear();
  // The listers drained the stack; a walk that never started them may not have.
  for (Task& t : stack_) ::close(t.fd);
  stack_.clear();
}

Status TreeWalker::Start(const std::string& dir) {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  racy_from_ns_ = Ns(now) - 1000000000;
  struct stat st;
  if (!store_root_.empty() && ::stat(store_root_.c_str(), &st) == 0) {
    store_dev_ = st.st_dev;
    store_ino_ = st.st_ino;
    have_store_ = true;
  }
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOTDIR) return Status::InvalidArgument(dir + " is not a directory");
    if (errno == ENOENT) return Status::NotFound("no such directory: " + dir);
    return Errno("cannot open", dir);
  }
  if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", dir);
  // The store inside what it publishes would publish itself as it grows;
  // the store's directory at or above the root, the whole of it.
  if (have_store_ && InsideDir(fd.get(), store_dev_, store_ino_))
    return Status::InvalidArgument("refusing to publish " + dir + ": it is inside the store " + store_root_);
  char* real = ::realpath(dir.c_str(), nullptr);
  if (!real) return Errno("cannot resolve", dir);
  root_abs_ = real;
  std::free(real);
  if (root_abs_ == "/") root_abs_.clear();  // children are "/name"
  DirNode root;
  root.path = dir;
  while (root.path.size() > 1 && root.path.back() == '/') root.path.pop_back();
  root.tree.mode = st.st_mode & kModeBits;
  root.tree.mtime_ns = Ns(st.st_mtim);
  root_path_ = root.path;
  dirs_.push_back(std::move(root));
  ++result_->directories;

  listings_.emplace_back();
  top_ = &listings_.back();
  stack_.push_back(Task{fd.release(), top_, root_path_, 0});
  for (unsigned i = 0; i < threads_; ++i) listers_.emplace_back([this] { Work(); });
  return Status::OK();
}

Status TreeWalker::Finish() {
  if (!top_) return Status::InvalidArgument("the walk was not started");
  Listing* top = top_;
  top_ = nullptr;
  Status s = Take(top, 0);
  Stop();
  return s;
}

void TreeWalker::Work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    ++idle_;
    work_cv_.wait(l, [this] { return stop_ || !stack_.empty(); });
    --idle_;
    if (stack_.empty()) return;  // stopped, nothing left to close
    Task t = std::move(stack_.back());
    stack_.pop_back();
    if (stop_) {
      ::close(t.fd);
      continue;
    }
    l.unlock();
    List(t);
    l.lock();
    Listing& done = *t.listing;
    // Queued last to first, so that the first is listed next.
    size_t queued = 0;
    for (size_t i = done.subdirs.size(); i-- > 0;) {
      Listing::Sub& sub = done.subdirs[i];
      if (sub.fd < 0) continue;
      if (stop_) {
        ::close(sub.fd);
      } else {
        listings_.emplace_back();
        sub.listing = &listings_.back();
        stack_.push_back(Task{sub.fd, sub.listing, t.path + "/" + done.entries[sub.slot].name, t.depth + 1});
        ++queued;
      }
      sub.fd = -1;
    }
    done.done = true;
    // Wake-ups are system calls: only for a thread that waits for this.
    if (awaited_ == &done) done_cv_.notify_one();
    if (queued > 0 && idle_ > 0) {
      if (queued > 1) work_cv_.notify_all();
      else work_cv_.notify_one();
    }
  }
}

void TreeWalker::List(Task& t) {
  Fd fd(t.fd);
  t.fd = -1;
  Listing& out = *t.listing;
  const std::string& path = t.path;
  auto fail = [&](Status s) {
    for (Listing::Sub& sub : out.subdirs)
      if (sub.fd >= 0) ::close(sub.fd);
    out.subdirs.clear();
    out.status = std::move(s);
  };
  if (t.depth >= kMaxTreeDepth)
    return fail(Status::InvalidArgument(path + " nests deeper than " + std::to_string(kMaxTreeDepth) + " levels"));
  const std::string abs_prefix = root_abs_ + path.substr(root_path_.size()) + "/";
  std::vector<std::string> names;
  {
    const int dup = ::dup(fd.get());
    if (dup < 0) return fail(Errno("cannot read directory", path));
    DIR* d = ::fdopendir(dup);
    if (!d) {
      ::close(dup);
      return fail(Errno("cannot read directory", path));
    }
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
      errno = 0;
    }
    const int err = errno;
    ::closedir(d);
    if (err != 0) {
      errno = err;
      return fail(Errno("cannot read directory", path));
    }
  }
  std::sort(names.begin(), names.end());
  out.entries.reserve(names.size());
  for (const std::string& name : names) {
    const std::string child = path + "/" + name;
    struct stat st;
    if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) {  // removed since the directory was read
        out.skipped.emplace_back(child, "vanished");
        continue;
      }
      return fail(Errno("cannot stat", child));
    }
    TreeNode e;
    e.name = name;
    if (S_ISREG(st.st_mode)) {
      e.type = EntryType::kFile;
      e.mode = st.st_mode & kModeBits;
      e.mtime_ns = Ns(st.st_mtim);
      e.size = static_cast<uint64_t>(st.st_size);
      FileJob job;
      job.dir = 0;  // Take's to say
      job.slot = out.entries.size();
      job.stamp.path = abs_prefix + name;
      job.stamp.dev = static_cast<int64_t>(st.st_dev);
      job.stamp.ino = static_cast<int64_t>(st.st_ino);
      job.stamp.size = static_cast<int64_t>(st.st_size);
      job.stamp.mtime_ns = e.mtime_ns;
      job.stamp.ctime_ns = Ns(st.st_ctim);
      job.cacheable = job.stamp.ctime_ns < racy_from_ns_ && job.stamp.mtime_ns < racy_from_ns_;
      out.files.emplace_back(job.slot, std::move(job));
    } else if (S_ISDIR(st.st_mode)) {
      if (have_store_ && st.st_dev == store_dev_ && st.st_ino == store_ino_) {
        out.skipped.emplace_back(child, "the store itself");
        continue;
      }
      const int sub = ::openat(fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (errno == ENOENT) {
          out.skipped.emplace_back(child, "vanished");
          continue;
        }
        return fail(Errno("cannot open directory", child));
      }
      e.type = EntryType::kDirectory;
      Listing::Sub s;
      s.slot = out.entries.size();
      s.fd = sub;
      // What the directory is now, through the descriptor its listing
      // will read (the name may have been replaced since the fstatat).
      struct stat sst;
      if (::fstat(sub, &sst) != 0) {
        s.status = Errno("cannot stat", child);
        ::close(sub);
        s.fd = -1;
      } else {
        s.mode = sst.st_mode & kModeBits;
        s.mtime_ns = Ns(sst.st_mtim);
      }
      out.subdirs.push_back(std::move(s));
    } else if (S_ISLNK(st.st_mode)) {
      // A buffer a byte longer than lstat said: a target that fills it was
      // changed meanwhile and is read again into a larger one.
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 64) + 1, '\0');
      ssize_t n;
      while ((n = ::readlinkat(fd.get(), name.c_str(), target.data(), target.size())) ==
                 static_cast<ssize_t>(target.size()) &&
             target.size() <= kMaxLinkTarget)
        target.resize(target.size() * 2);
      if (n < 0) {
        if (errno == ENOENT) {
          out.skipped.emplace_back(child, "vanished");
          continue;
        }
        return fail(Errno("cannot read symlink", child));
      }
      target.resize(static_cast<size_t>(n));
      e.type = EntryType::kSymlink;
      e.mtime_ns = Ns(st.st_mtim);
      e.target = std::move(target);
      if (e.target.empty() || e.target.size() > kMaxLinkTarget) {
        out.skipped.emplace_back(child, "symlink target out of range");
        continue;
      }
      ++out.symlinks;
    } else {
      out.skipped.emplace_back(child, S_ISFIFO(st.st_mode) ? "fifo" : S_ISSOCK(st.st_mode) ? "socket" : "device");
      continue;
    }
    Status name_ok = CheckEntryName(e.name);
    if (!name_ok.ok()) return fail(name_ok.WithContext(child));
    out.entries.push_back(std::move(e));
  }
}

Status TreeWalker::Take(Listing* listing, size_t node) {
  {
    std::unique_lock<std::mutex> l(mu_);
    awaited_ = listing;
    done_cv_.wait(l, [listing] { return listing->done; });
    awaited_ = nullptr;
  }
  Listing& in = *listing;
  for (const auto& [path, why] : in.skipped) Skip(path, why);
  in.skipped.clear();
  if (!in.status.ok()) return in.status;
  result_->files += in.files.size();
  result_->symlinks += in.symlinks;
  if (files_.capacity() - files_.size() < in.files.size()) files_.reserve(files_.size() * 2 + in.files.size() + 1024);
  for (auto& [slot, job] : in.files) {
    job.dir = node;
    files_.push_back(std::move(job));
  }
  in.files.clear();
  in.files.shrink_to_fit();
  dirs_[node].tree.entries = std::move(in.entries);
  // Depth first, as the tree's entries are ordered.
  for (Listing::Sub& sub : in.subdirs) {
    if (!sub.status.ok()) return sub.status;
    DirNode d;
    d.path = dirs_[node].path + "/" + dirs_[node].tree.entries[sub.slot].name;
    d.parent = node;
    d.slot = sub.slot;
    d.tree.mode = sub.mode;
    d.tree.mtime_ns = sub.mtime_ns;
    dirs_.push_back(std::move(d));
    ++result_->directories;
    CHUNKSTORE_RETURN_IF_ERROR(Take(sub.listing, dirs_.size() - 1));
  }
  return Status::OK();
}

}  // namespace chunkstore::internal

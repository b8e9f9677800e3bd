// SPDX-License-Identifier: Apache-2.0
// Restoring a tree (or one object) into the file system (store.h,
// Store::Restore).
//
// The walk runs on the calling thread, on directory descriptors: every
// name is opened or created with openat and O_NOFOLLOW (or acted on with
// *at calls that do not follow a final symlink), so a symlink in the
// destination, whether the restore made it or found it there, is an entry
// like any other and never a way out. Names come from trees that passed
// DecodeTree: one path component each, never "." or "..". Files are
// looked at (what the destination holds under their names) and written by
// worker threads, each from a verified reader into a new file
// (O_CREAT | O_EXCL | O_NOFOLLOW) that gets its name by a rename when it
// replaces one, so nobody sees half a file under a name the tree gives.
// A directory gets its mode and mtime once everything inside it is done
// (creating entries would change its mtime again), which the last task to
// finish in it does.
//
// Nothing is synced: a restore that a crash cut short is finished by
// running it again, which leaves alone what is already right.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "backend/sparse_file.h"
#include "format/tree.h"
#include "hash/digest.h"
#include "store/store_impl.h"
#include "store/trees.h"
#include "tree/fs.h"

namespace chunkstore {

using namespace internal;

namespace {

// A directory being filled. Its descriptor stays open until everything in
// it is done; then its mode and mtime are set.
struct DirState {
  Fd fd;
  std::string path;  // from dest, for messages ("." for dest itself)
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  std::shared_ptr<DirState> parent;
  bool fresh = false;  // made by this restore: empty when its walk begins
  int depth = 0;       // levels below dest
  std::atomic<int> pending{1};  // the walk of it, and each task or subdirectory under way in it
};

struct FileJob {
  TreeNode entry;
  bool check = false;    // the destination has something under its name: look at it first
  bool replace = false;  // something is there now: write aside, then rename over it
  bool verify = false;   // a file with the right stamp: compare its content first
  bool set_mode = false; // ... whose mode differs: set it once the content is known good
  dev_t dev = 0;         // the file seen there, which set_mode must still find
  ino_t ino = 0;
  bool done = false;     // found as the tree has it: nothing to write
};

// The files one directory needs written. A task is a whole directory's:
// two threads creating files in one directory would queue on its lock
// (and, where the kernel spins for it, burn a core doing so).
struct DirTask {
  std::shared_ptr<DirState> dir;
  std::vector<FileJob> files;
};

std::string Join(const std::string& dir, const std::string& name) { return dir == "." ? name : dir + "/" + name; }

class Restorer {
 public:
  Restorer(Store* store, Store::Impl* impl, const RestoreOptions& options, RestoreReport* report)
      : store_(store), impl_(impl), options_(options), report_(report) {
    umask_ = ::umask(0);
    ::umask(umask_);
  }
  ~Restorer() { StopWorkers(); }

  // Fills the directory open at dest_fd from tree (fresh: made just now,
  // so empty).
  Status RestoreTree(Fd dest_fd, const Digest& tree, bool fresh);
  // Writes one object as the file name in the directory open at dir_fd.
  Status RestoreFile(int dir_fd, const std::string& name, const std::string& path, const TreeNode& entry,
                     bool has_metadata);

 private:
  Status Fill(const std::shared_ptr<DirState>& dir, const TreeData& tree, int depth);
  void Queue(DirTask task);
  void StartWorkers();
  void StopWorkers();
  void Work();
  // One part of a directory's work is done; the last sets its metadata.
  void Finish(std::shared_ptr<DirState> dir);
  // Writes e's object, read through reader (the result of opening it).
  Status WriteFile(int dir_fd, const std::string& name, const std::string& path, const TreeNode& e, bool replace,
                   bool set_metadata, Result<std::unique_ptr<Reader>> reader);
  // Looks at what the destination holds under job's name and decides
  // what the job does: nothing (done), compare first (verify), or write
  // in its place (replace).
  Status Check(const DirState& dir, const std::string& path, FileJob* job);
  void Fail(const Status& s) {
    std::lock_guard<std::mutex> l(mu_);
    if (error_.ok()) error_ = s;
    failed_.store(true);
  }
  bool Cancelled() const { return options_.cancel && options_.cancel->load(std::memory_order_relaxed); }
  void Report() {
    if (options_.progress) options_.progress(bytes_.load(), entries_.load());
  }

  Store* store_;
  Store::Impl* impl_;
  mode_t umask_ = 022;
  const RestoreOptions& options_;
  RestoreReport* report_;
  std::mutex mu_;
  std::condition_variable cv_;   // workers: a task is queued, or stop
  std::condition_variable room_; // the walk: the queue has room, or all is done
  std::deque<DirTask> queue_;
  size_t running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
  Status error_;
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> bytes_{0}, entries_{0}, written_{0}, unchanged_{0}, fixed_{0};
  std::atomic<uint64_t> dirs_{0}, links_{0}, removed_{0};
};

constexpr size_t kQueueDepth = 64;
// Readers opened at once for the files of one directory (each holds its
// manifest, and an inline object its content, until its file is written).
constexpr size_t kOpenBatch = 64;

void Restorer::StartWorkers() {
  const unsigned n = std::max(1u, impl_->threads);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { Work(); });
}

void Restorer::StopWorkers() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Restorer::Queue(DirTask task) {
  task.dir->pending.fetch_add(1);
  std::unique_lock<std::mutex> l(mu_);
  room_.wait(l, [&] { return queue_.size() < kQueueDepth; });
  queue_.push_back(std::move(task));
  l.unlock();
  cv_.notify_one();
}

void Restorer::Work() {
  for (;;) {
    DirTask task;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    room_.notify_one();
    // A run of files at a time: first what the destination holds under
    // their names (the walk leaves that to these threads, so a restore
    // over a copy stats on every core), then the readers of those to be
    // written, opened together in one read of the index (a lookup outside
    // a transaction takes and drops the index's file locks every time).
    for (size_t from = 0; from < task.files.size() && !failed_.load(); from += kOpenBatch) {
      const size_t end = std::min(task.files.size(), from + kOpenBatch);
      std::vector<std::string> ids;
      for (size_t k = from; k < end && !failed_.load(); ++k) {
        FileJob& job = task.files[k];
        if (job.check) {
          Status s = Check(*task.dir, Join(task.dir->path, job.entry.name), &job);
          if (!s.ok()) Fail(s);
        }
        if (!job.done) ids.push_back(job.entry.id.ObjectId());
      }
      if (failed_.load()) break;
      std::vector<Result<std::unique_ptr<Reader>>> opened = store_->OpenReaders(ids);
      size_t next_reader = 0;
      for (size_t k = from; k < end; ++k) {
        const FileJob& job = task.files[k];
        if (job.done) continue;
        Result<std::unique_ptr<Reader>>& reader = opened[next_reader++];
        if (failed_.load()) break;
        if (Cancelled()) {
          Fail(Status::IOError("interrupted"));
          break;
        }
        const std::string path = Join(task.dir->path, job.entry.name);
        bool write = true;
        if (job.verify) {
          const SeenFile seen{job.dev, job.ino, job.set_mode, job.entry.mode};
          Result<bool> same = HasContent(task.dir->fd.get(), job.entry.name, path, job.entry.size, job.entry.id, &seen);
          if (same.ok() && *same && job.set_mode) ++fixed_;
          if (!same.ok()) Fail(same.status());
          write = same.ok() && !*same;
          if (same.ok() && *same) {
            ++unchanged_;
            ++entries_;
          }
        }
        if (write && !failed_.load()) {
          Status s =
              WriteFile(task.dir->fd.get(), job.entry.name, path, job.entry, job.replace, true, std::move(reader));
          if (!s.ok()) Fail(s);
        }
      }
    }
    std::shared_ptr<DirState> dir = std::move(task.dir);
    Finish(std::move(dir));
    {
      std::lock_guard<std::mutex> l(mu_);
      --running_;
    }
    room_.notify_all();
  }
}

void Restorer::Finish(std::shared_ptr<DirState> dir) {
  while (dir && dir->pending.fetch_sub(1) == 1) {
    // Everything inside is done: now its own mode and mtime, which writing
    // inside it would have changed again.
    if (!failed_.load()) {
      if (::fchmod(dir->fd.get(), dir->mode) != 0) Fail(Errno("cannot set the mode of", dir->path));
      const struct timespec times[2] = {{0, UTIME_OMIT}, FromNs(dir->mtime_ns)};
      if (::futimens(dir->fd.get(), times) != 0) Fail(Errno("cannot set the time of", dir->path));
    }
    std::shared_ptr<DirState> parent = std::move(dir->parent);
    dir.reset();  // closes its descriptor
    dir = std::move(parent);
  }
}

Status Restorer::Check(const DirState& dir, const std::string& path, FileJob* job) {
  const int dir_fd = dir.fd.get();
  const TreeNode& e = job->entry;
  struct stat st;
  if (::fstatat(dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status::OK();
    return Errno("cannot stat", path);
  }
  // A directory where the tree has a file goes only when asked.
  if (S_ISDIR(st.st_mode)) {
    if (!options_.delete_extra)
      return Status::InvalidArgument(path + " is a directory; the tree has a file there (delete_extra replaces it)");
    CHUNKSTORE_RETURN_IF_ERROR(RemoveEntry(dir_fd, e.name, path, dir.depth + 1));
    ++removed_;
    return Status::OK();
  }
  job->replace = true;
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == e.size && Ns(st.st_mtim) == e.mtime_ns) {
    job->set_mode = (st.st_mode & kModeBits) != e.mode;
    job->dev = st.st_dev;
    job->ino = st.st_ino;
    if (options_.verify_existing) {
      job->verify = true;  // the mode, if wrong, only once the content is known good
      return Status::OK();
    }
    if (job->set_mode) {
      // Something swapped in since the stat (a link, a FIFO) is not
      // followed or waited on: it is written over instead.
      Result<bool> same = SetModeIfSame(dir_fd, e.name, path, st.st_dev, st.st_ino, e.mode);
      if (!same.ok()) return same.status();
      if (!*same) return Status::OK();
      ++fixed_;
    }
    ++unchanged_;
    ++entries_;
    job->done = true;
  }
  return Status::OK();
}

Status Restorer::WriteFile(int dir_fd, const std::string& name, const std::string& path, const TreeNode& e,
                           bool replace, bool set_metadata, Result<std::unique_ptr<Reader>> reader) {
  if (!reader.ok()) return reader.status().WithContext("cannot restore " + path);
  Reader& r = **reader;
  if (set_metadata && r.size() != e.size)
    return Status::Corruption("cannot restore " + path + ": the tree gives it " + std::to_string(e.size) +
                                  " bytes, its object " + e.id.ObjectId() + " holds " + std::to_string(r.size()),
                              e.id.ObjectId());
  std::string target = name;
  if (replace) {
    // Beside it, under a name no tree entry can collide with for long.
    target = "." + name.substr(0, 200) + ".chunkstore-" + RandomHex(6);
  }
  // Created with its mode where the umask keeps it as it is and it has no
  // special bits (those only once the content is in): one call fewer.
  const bool mode_at_create = set_metadata && (e.mode & 07000) == 0 && (e.mode & umask_) == 0;
  Fd fd(::openat(dir_fd, target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                 mode_at_create ? e.mode : 0600));
  if (fd.get() < 0) return Errno("cannot create", path);
  auto drop = [&](Status s) {
    ::unlinkat(dir_fd, target.c_str(), 0);
    return s;
  };
  SparseWriter writer(fd.get(), options_.sparse, true);
  uint64_t left = r.size();
  while (left > 0) {
    Result<ByteView> view = r.ReadView(static_cast<size_t>(std::min<uint64_t>(left, SIZE_MAX)));
    if (!view.ok()) return drop(view.status().WithContext("cannot restore " + path));
    if (view->size == 0) break;
    if (!writer.Write(view->data, view->size)) return drop(Errno("cannot write", path));
    left -= view->size;
    bytes_ += view->size;
  }
  if (left != 0) return drop(Status::Corruption("cannot restore " + path + ": its object ended early", e.id.ObjectId()));
  if (!writer.Finish()) return drop(Errno("cannot write", path));
  // Through the descriptor, before the file has its name: a mode set
  // after the rename would follow a link put there meanwhile.
  if (!mode_at_create && ::fchmod(fd.get(), e.mode) != 0) return drop(Errno("cannot set the mode of", path));
  if (set_metadata) {
    const struct timespec times[2] = {{0, UTIME_OMIT}, FromNs(e.mtime_ns)};
    if (::futimens(fd.get(), times) != 0) return drop(Errno("cannot set the time of", path));
  }
  const int fd_num = fd.release();
  if (::close(fd_num) != 0) return drop(Errno("cannot write", path));
  if (replace && ::renameat(dir_fd, target.c_str(), dir_fd, name.c_str()) != 0)
    return drop(Errno("cannot replace", path));
  ++written_;
  ++entries_;
  return Status::OK();
}

Status Restorer::Fill(const std::shared_ptr<DirState>& dir, const TreeData& tree, int depth) {
  if (depth > kMaxTreeDepth)
    return Status::Corruption("trees nest deeper than " + std::to_string(kMaxTreeDepth) + " levels at " + dir->path);
  const int fd = dir->fd.get();
  // What the destination holds here already (nothing, in a directory
  // this restore has just made).
  std::set<std::string> present;
  if (!dir->fresh) {
    const int dup = ::dup(fd);
    DIR* d = dup >= 0 ? ::fdopendir(dup) : nullptr;
    if (!d) {
      if (dup >= 0) ::close(dup);
      return Errno("cannot read directory", dir->path);
    }
    while (struct dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) present.insert(e->d_name);
    ::closedir(d);
  }
  DirTask files;
  files.dir = dir;
  std::vector<const TreeNode*> subdirs;
  for (const TreeNode& e : tree.entries) {
    if (failed_.load()) return Status::OK();
    if (Cancelled()) return Status::IOError("interrupted");
    const std::string path = Join(dir->path, e.name);
    const bool there = present.erase(e.name) > 0;
    if (e.type == EntryType::kFile) {
      // What is there now is looked at by the thread that writes it.
      FileJob task;
      task.entry = e;
      task.check = there;
      files.files.push_back(std::move(task));
      continue;
    }
    struct stat st;
    bool exists = false;
    if (there && ::fstatat(fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) exists = true;
    // A directory where the tree has something else goes only when asked.
    if (exists && S_ISDIR(st.st_mode) && e.type != EntryType::kDirectory) {
      if (!options_.delete_extra)
        return Status::InvalidArgument(path + " is a directory; the tree has a " + EntryTypeName(e.type) +
                                       " there (delete_extra replaces it)");
      CHUNKSTORE_RETURN_IF_ERROR(RemoveEntry(fd, e.name, path, depth + 1));
      ++removed_;
      exists = false;
    }
    switch (e.type) {
      case EntryType::kFile:
        break;  // queued above
      case EntryType::kSymlink: {
        if (exists && S_ISLNK(st.st_mode)) {
          std::string now(e.target.size() + 1, '\0');
          const ssize_t n = ::readlinkat(fd, e.name.c_str(), now.data(), now.size());
          if (n == static_cast<ssize_t>(e.target.size()) && now.compare(0, e.target.size(), e.target) == 0) {
            if (Ns(st.st_mtim) != e.mtime_ns) {
              const struct timespec times[2] = {{0, UTIME_OMIT}, FromNs(e.mtime_ns)};
              if (::utimensat(fd, e.name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
                return Errno("cannot set the time of", path);
              ++fixed_;
            }
            ++entries_;
            break;
          }
        }
        std::string target = e.name;
        if (exists) target = "." + e.name.substr(0, 200) + ".chunkstore-" + RandomHex(6);
        if (::symlinkat(e.target.c_str(), fd, target.c_str()) != 0) return Errno("cannot create symlink", path);
        if (exists && ::renameat(fd, target.c_str(), fd, e.name.c_str()) != 0) {
          Status s = Errno("cannot replace", path);
          ::unlinkat(fd, target.c_str(), 0);
          return s;
        }
        const struct timespec times[2] = {{0, UTIME_OMIT}, FromNs(e.mtime_ns)};
        if (::utimensat(fd, e.name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return Errno("cannot set the time of", path);
        ++links_;
        ++entries_;
        break;
      }
      case EntryType::kDirectory: {
        subdirs.push_back(&e);  // once this directory's files are on their way
        break;
      }
    }
    Report();
  }
  if (!files.files.empty()) Queue(std::move(files));
  for (const TreeNode* sub_entry : subdirs) {
    if (failed_.load()) return Status::OK();
    if (Cancelled()) return Status::IOError("interrupted");
    const TreeNode& e = *sub_entry;
    const std::string path = Join(dir->path, e.name);
    struct stat st;
    bool exists = !dir->fresh && ::fstatat(fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists && !S_ISDIR(st.st_mode)) {
      if (::unlinkat(fd, e.name.c_str(), 0) != 0) return Errno("cannot replace", path);
      ++removed_;
      exists = false;
    }
    if (!exists && ::mkdirat(fd, e.name.c_str(), 0700) != 0) return Errno("cannot create directory", path);
    Fd sub(::openat(fd, e.name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (sub.get() < 0) return Errno("cannot open directory", path);
    // One a tree made read-only last time is writable until it is done (its
    // tree's mode is set again at the end).
    if (exists && (st.st_mode & S_IWUSR) == 0 && ::fchmod(sub.get(), (st.st_mode & 07777) | S_IRWXU) != 0)
      return Errno("cannot make writable", path);
    Result<TreeData> subtree = ReadTree(impl_, e.id);
    if (!subtree.ok()) return subtree.status();
    auto child = std::make_shared<DirState>();
    child->fd = std::move(sub);
    child->path = path;
    child->mode = subtree->mode;
    child->mtime_ns = subtree->mtime_ns;
    child->parent = dir;
    child->fresh = !exists;
    child->depth = depth + 1;
    dir->pending.fetch_add(1);
    ++dirs_;
    ++entries_;
    Status s = Fill(child, *subtree, depth + 1);
    Finish(std::move(child));
    CHUNKSTORE_RETURN_IF_ERROR(s);
    Report();
  }
  if (options_.delete_extra) {
    for (const std::string& name : present) {
      CHUNKSTORE_RETURN_IF_ERROR(RemoveEntry(fd, name, Join(dir->path, name), depth + 1));
      ++removed_;
    }
  }
  return Status::OK();
}

Status Restorer::RestoreTree(Fd dest_fd, const Digest& tree, bool fresh) {
  Result<TreeData> root = ReadTree(impl_, tree);
  if (!root.ok()) return root.status();
  auto dir = std::make_shared<DirState>();
  dir->fd = std::move(dest_fd);
  dir->path = ".";
  dir->fresh = fresh;
  dir->mode = root->mode;
  dir->mtime_ns = root->mtime_ns;
  ++dirs_;
  StartWorkers();
  Status walked = Fill(dir, *root, 0);
  if (!walked.ok()) Fail(walked);
  Finish(std::move(dir));
  {
    // Every task queued is done once nothing is queued or running.
    std::unique_lock<std::mutex> l(mu_);
    room_.wait(l, [&] { return queue_.empty() && running_ == 0; });
  }
  StopWorkers();
  Report();
  report_->files_written = written_.load();
  report_->files_unchanged = unchanged_.load();
  report_->bytes_written = bytes_.load();
  report_->directories = dirs_.load();
  report_->symlinks_written = links_.load();
  report_->metadata_fixed = fixed_.load();
  report_->removed = removed_.load();
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

Status Restorer::RestoreFile(int dir_fd, const std::string& name, const std::string& path, const TreeNode& entry,
                             bool has_metadata) {
  struct stat st;
  bool exists = false;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    exists = true;
    if (S_ISDIR(st.st_mode)) return Status::InvalidArgument(path + " is a directory");
    if (S_ISREG(st.st_mode) && has_metadata && static_cast<uint64_t>(st.st_size) == entry.size &&
        Ns(st.st_mtim) == entry.mtime_ns) {
      const bool set_mode = (st.st_mode & kModeBits) != entry.mode;
      const SeenFile seen{st.st_dev, st.st_ino, set_mode, static_cast<mode_t>(entry.mode)};
      Result<bool> same = options_.verify_existing ? HasContent(dir_fd, name, path, entry.size, entry.id, &seen)
                          : set_mode ? SetModeIfSame(dir_fd, name, path, st.st_dev, st.st_ino, entry.mode)
                                     : Result<bool>(true);
      if (!same.ok()) return same.status();
      if (*same && set_mode) report_->metadata_fixed = 1;
      if (*same) {
        report_->files_unchanged = 1;
        return Status::OK();
      }
    }
  } else if (errno != ENOENT) {
    return Errno("cannot stat", path);
  }
  TreeNode e = entry;
  if (!has_metadata) {
    // No tree says what mode it had: what a new file gets here.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    e.mode = 0666 & ~mask;
  }
  CHUNKSTORE_RETURN_IF_ERROR(
      WriteFile(dir_fd, name, path, e, exists, has_metadata, store_->OpenReader(e.id.ObjectId())));
  report_->files_written = 1;
  report_->bytes_written = bytes_.load();
  return Status::OK();
}

// Creates dir and any missing parents (mkdir -p): the parents as mkdir -p
// would, the last one 0700 until its tree gives it a mode.
Status MakeDirs(const std::string& dir, mode_t mode = 0700) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + " exists and is not a directory");
    return Status::OK();
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) CHUNKSTORE_RETURN_IF_ERROR(MakeDirs(dir.substr(0, slash), 0777));
  if (::mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) return Errno("cannot create directory", dir);
  return Status::OK();
}

}  // namespace

Result<RestoreReport> Store::Restore(const std::string& ref, const std::string& dest_in, const RestoreOptions& options) {
  if (dest_in.empty()) return Status::InvalidArgument("the destination is empty");
  std::string dest = dest_in;
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  // What ref names, and its metadata when a tree gives it.
  Result<TreeEntry> what = LookupPath(ref);
  if (!what.ok()) return what.status();
  if (what->type == EntryType::kSymlink)
    return Status::InvalidArgument(ref + " is a symlink (to " + what->target.substr(0, 256) + "); restore its directory");
  Result<Digest> id = [&]() -> Result<Digest> {
    std::optional<Digest> d = Digest::FromHex(std::string_view(what->id).substr(7));
    if (!d) return Status::Corruption("malformed id " + what->id);
    return *d;
  }();
  if (!id.ok()) return id.status();
  const bool in_tree = !what->name.empty();  // REF:PATH: the tree gave mode and mtime
  // Never into the store's own directory.
  struct stat store_st;
  const bool have_store = !impl_->root.empty() && ::stat(impl_->root.c_str(), &store_st) == 0;
  RestoreReport report;
  Restorer restorer(this, impl_.get(), options, &report);
  if (what->type == EntryType::kDirectory) {
    struct stat st;
    const bool existed = ::lstat(dest.c_str(), &st) == 0;
    CHUNKSTORE_RETURN_IF_ERROR(MakeDirs(dest));
    Fd fd(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() < 0) return Errno("cannot open", dest);
    if (have_store && InsideDir(fd.get(), store_st.st_dev, store_st.st_ino))
      return Status::InvalidArgument("refusing to restore into " + dest + ": it is inside the store " + impl_->root);
    if (::fstat(fd.get(), &st) != 0) return Errno("cannot stat", dest);
    if ((st.st_mode & S_IWUSR) == 0 && ::fchmod(fd.get(), (st.st_mode & 07777) | S_IRWXU) != 0)
      return Errno("cannot make writable", dest);
    CHUNKSTORE_RETURN_IF_ERROR(restorer.RestoreTree(std::move(fd), *id, !existed));
    return report;
  }
  // One file: dest names it; its directory must exist.
  const size_t slash = dest.find_last_of('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : dest.substr(0, slash);
  const std::string name = slash == std::string::npos ? dest : dest.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return Status::InvalidArgument(dest + " is a directory");
  Fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return Errno("cannot open", parent);
  if (have_store && InsideDir(dir.get(), store_st.st_dev, store_st.st_ino))
    return Status::InvalidArgument("refusing to restore into " + dest + ": it is inside the store " + impl_->root);
  TreeNode e;
  e.type = EntryType::kFile;
  e.name = name;
  e.id = *id;
  e.mode = what->mode;
  e.mtime_ns = what->mtime_ns;
  e.size = what->size;
  CHUNKSTORE_RETURN_IF_ERROR(restorer.RestoreFile(dir.get(), name, dest, e, in_tree));
  return report;
}

}  // namespace chunkstore

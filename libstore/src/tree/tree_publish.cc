// SPDX-License-Identifier: Apache-2.0
// Publishing a directory as a tree (store.h, Store::PublishTree and
// Batch::AddTree): walk it, publish every file as a member object, then
// every directory's tree object from the bottom up, all in one batch.
//
// The walk works on directory descriptors (openat with O_NOFOLLOW), so a
// symlink below the root is recorded as a link and never followed. Files
// the stat cache vouches for (index.h, StatEntry: same path, device,
// inode, size, mtime and ctime as when their content was published, and
// the object still in the store) are not read; what the walk learns about
// the others is recorded once the batch is committed. A file whose ctime
// is within a second of the walk's start is not recorded: it may still be
// changing within the clock's granularity, where a later change would
// leave its stamp as it was (git's "racy clean" problem).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <deque>
#include <future>
#include <unordered_map>

#include "base/task_pool.h"
#include "format/compress.h"
#include "format/tree.h"
#include "hash/digest.h"
#include "ingest/ingest.h"
#include "store/batch_impl.h"
#include "store/store_impl.h"
#include "tree/fs.h"

namespace chunkstore {

using namespace internal;

namespace {

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

class Walker {
 public:
  Walker(Batch::Impl* batch, const TreePublishOptions& options, TreePublishResult* result)
      : batch_(batch), options_(options), result_(result) {}

  Status Run(const std::string& dir);
  std::vector<DirNode>& dirs() { return dirs_; }
  // What every stat cache path below the root starts with.
  std::string root_prefix() const { return root_abs_ + "/"; }
  std::vector<FileJob>& files() { return files_; }

 private:
  Status WalkDir(int fd, size_t node, int depth);
  void Skip(const std::string& path, const std::string& why) {
    ++result_->skipped;
    if (options_.skipped) options_.skipped(path, why);
  }

  Batch::Impl* batch_;
  const TreePublishOptions& options_;
  TreePublishResult* result_;
  std::vector<DirNode> dirs_;
  std::vector<FileJob> files_;
  std::string root_abs_;  // the root's absolute path, for the stat cache
  int64_t racy_from_ns_ = 0;
  dev_t store_dev_ = 0;
  ino_t store_ino_ = 0;
  bool have_store_ = false;
};

Status Walker::Run(const std::string& dir) {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  racy_from_ns_ = Ns(now) - 1000000000;
  const std::string& store_root = batch_->store->root;
  struct stat st;
  if (!store_root.empty() && ::stat(store_root.c_str(), &st) == 0) {
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
    return Status::InvalidArgument("refusing to publish " + dir + ": it is inside the store " + store_root);
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
  dirs_.push_back(std::move(root));
  ++result_->directories;
  return WalkDir(fd.get(), 0, 0);
}

Status Walker::WalkDir(int fd, size_t node, int depth) {
  if (depth >= kMaxTreeDepth)
    return Status::InvalidArgument(dirs_[node].path + " nests deeper than " + std::to_string(kMaxTreeDepth) + " levels");
  const std::string path = dirs_[node].path;
  const std::string abs_prefix = root_abs_ + path.substr(dirs_[0].path.size()) + "/";
  std::vector<std::string> names;
  {
    const int dup = ::dup(fd);
    if (dup < 0) return Errno("cannot read directory", path);
    DIR* d = ::fdopendir(dup);
    if (!d) {
      ::close(dup);
      return Errno("cannot read directory", path);
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
      return Errno("cannot read directory", path);
    }
  }
  std::sort(names.begin(), names.end());
  std::vector<std::pair<size_t, int>> subdirs;  // slot, open descriptor
  auto close_subdirs = [&] {
    for (auto& [slot, sub] : subdirs) ::close(sub);
  };
  for (const std::string& name : names) {
    const std::string child = path + "/" + name;
    struct stat st;
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) {  // removed since the directory was read
        Skip(child, "vanished");
        continue;
      }
      Status s = Errno("cannot stat", child);
      close_subdirs();
      return s;
    }
    TreeNode e;
    e.name = name;
    if (S_ISREG(st.st_mode)) {
      e.type = EntryType::kFile;
      e.mode = st.st_mode & kModeBits;
      e.mtime_ns = Ns(st.st_mtim);
      e.size = static_cast<uint64_t>(st.st_size);
      FileJob job;
      job.dir = node;
      job.slot = dirs_[node].tree.entries.size();
      job.stamp.path = abs_prefix + name;
      job.stamp.dev = static_cast<int64_t>(st.st_dev);
      job.stamp.ino = static_cast<int64_t>(st.st_ino);
      job.stamp.size = static_cast<int64_t>(st.st_size);
      job.stamp.mtime_ns = e.mtime_ns;
      job.stamp.ctime_ns = Ns(st.st_ctim);
      job.cacheable = job.stamp.ctime_ns < racy_from_ns_ && job.stamp.mtime_ns < racy_from_ns_;
      if (files_.size() == files_.capacity()) files_.reserve(files_.size() * 2 + 1024);
      files_.push_back(std::move(job));
      ++result_->files;
    } else if (S_ISDIR(st.st_mode)) {
      if (have_store_ && st.st_dev == store_dev_ && st.st_ino == store_ino_) {
        Skip(child, "the store itself");
        continue;
      }
      const int sub = ::openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        if (errno == ENOENT) {
          Skip(child, "vanished");
          continue;
        }
        Status s = Errno("cannot open directory", child);
        close_subdirs();
        return s;
      }
      e.type = EntryType::kDirectory;
      subdirs.emplace_back(dirs_[node].tree.entries.size(), sub);
    } else if (S_ISLNK(st.st_mode)) {
      // A buffer a byte longer than lstat said: a target that fills it was
      // changed meanwhile and is read again into a larger one.
      std::string target(static_cast<size_t>(st.st_size > 0 ? st.st_size : 64) + 1, '\0');
      ssize_t n;
      while ((n = ::readlinkat(fd, name.c_str(), target.data(), target.size())) == static_cast<ssize_t>(target.size()) &&
             target.size() <= kMaxLinkTarget)
        target.resize(target.size() * 2);
      if (n < 0) {
        if (errno == ENOENT) {
          Skip(child, "vanished");
          continue;
        }
        Status s = Errno("cannot read symlink", child);
        close_subdirs();
        return s;
      }
      target.resize(static_cast<size_t>(n));
      e.type = EntryType::kSymlink;
      e.mtime_ns = Ns(st.st_mtim);
      e.target = std::move(target);
      if (e.target.empty() || e.target.size() > kMaxLinkTarget) {
        Skip(child, "symlink target out of range");
        continue;
      }
      ++result_->symlinks;
    } else {
      Skip(child, S_ISFIFO(st.st_mode) ? "fifo" : S_ISSOCK(st.st_mode) ? "socket" : "device");
      continue;
    }
    Status name_ok = CheckEntryName(e.name);
    if (!name_ok.ok()) {
      close_subdirs();
      return name_ok.WithContext(child);
    }
    dirs_[node].tree.entries.push_back(std::move(e));
  }
  // Depth first, each directory's descriptor closed as soon as it is done.
  Status s;
  for (size_t i = 0; i < subdirs.size(); ++i) {
    Fd sub(subdirs[i].second);
    subdirs[i].second = -1;
    if (!s.ok()) continue;
    struct stat st;
    if (::fstat(sub.get(), &st) != 0) {
      s = Errno("cannot stat", path + "/" + dirs_[node].tree.entries[subdirs[i].first].name);
      continue;
    }
    DirNode d;
    d.path = path + "/" + dirs_[node].tree.entries[subdirs[i].first].name;
    d.parent = node;
    d.slot = subdirs[i].first;
    d.tree.mode = st.st_mode & kModeBits;
    d.tree.mtime_ns = Ns(st.st_mtim);
    dirs_.push_back(std::move(d));
    ++result_->directories;
    s = WalkDir(sub.get(), dirs_.size() - 1, depth + 1);
  }
  return s;
}

// A small file read whole on a worker thread: its one chunk hashed and,
// when it is too large to live inline, compressed.
struct SmallFile {
  Status status;
  bool whole = false;  // false: it has grown to the chunk minimum; chunk it as usual
  std::vector<uint8_t> bytes;
  IngestedChunk chunk;
};

SmallFile ReadSmallFile(const std::string& path, uint32_t below, uint32_t inline_max, const Compression& compression) {
  SmallFile out;
  // Never through a symlink put in the file's place since the walk.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    out.status = errno == ENOENT ? Status::NotFound("cannot open " + path + ": it was removed while the tree was read")
                                 : Errno("cannot open", path);
    return out;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    out.status = Errno("cannot stat", path);
    return out;
  }
  if (!S_ISREG(st.st_mode)) {
    out.status = Status::InvalidArgument(path + " is no longer a regular file");
    return out;
  }
  // Room for what stat says and a byte more, to see the end: a buffer of
  // the chunk minimum per file would be mostly zeroing.
  const size_t room = std::min<size_t>(below, static_cast<size_t>(st.st_size) + 1);
  out.bytes.resize(room);
  size_t got = 0;
  while (got < room) {
    const ssize_t n = ::read(fd.get(), out.bytes.data() + got, room - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      out.status = Errno("cannot read", path);
      return out;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got == room) return out;  // it grew since the walk: chunked as usual
  out.bytes.resize(got);
  out.whole = true;
  IngestedChunk& c = out.chunk;
  c.length = static_cast<uint32_t>(got);
  c.id = Sha256::Of(out.bytes.data(), got);
  if (got > inline_max && got > 0) {
    c.codec = TryCompress(out.bytes.data(), got, &c.packed, {compression});
    if (c.codec == Codec::kRaw) c.packed.clear();
  }
  return out;
}

}  // namespace

Result<TreePublishResult> Batch::AddTree(const std::string& dir, const std::string& name,
                                         const TreePublishOptions& options) {
  Impl* b = impl_.get();
  if (b->failed) return Status::InvalidArgument("the batch already failed or was committed");
  if (!name.empty()) CHUNKSTORE_RETURN_IF_ERROR(ValidateName(name));
  TreePublishResult result;
  // The stat cache is read while the directory is walked: one is the
  // index's work, the other the kernel's. The mark comes first, so a
  // removal of an object the cache names, after the scan saw it, is seen
  // at commit.
  CHUNKSTORE_RETURN_IF_ERROR(b->session.TakeMark());
  using Cached = std::unordered_map<std::string, std::pair<Index::StatEntry, std::optional<uint64_t>>>;
  std::future<Cached> scan;
  if (!options.force_hash) {
    if (char* real = ::realpath(dir.c_str(), nullptr)) {
      std::string prefix = std::string(real) + "/";
      std::free(real);
      if (prefix == "//") prefix = "/";
      scan = std::async(std::launch::async, [store = b->store, prefix] {
        Cached cached;
        auto db = store->index.Lock();
        ReadTxn txn(db.get());
        if (!txn.status().ok()) return cached;
        // One scan below the root, objects joined in: a lookup per file
        // would cost more than the stat that decides it.
        (void)db->ForEachStat(prefix, [&](Index::StatEntry& e, std::optional<uint64_t> size) {
          std::string path = e.path;
          cached.emplace(std::move(path), std::make_pair(std::move(e), size));
        });
        return cached;
      });
    }
  }
  Walker walker(b, options, &result);
  Status walked = walker.Run(dir);
  Cached cached = scan.valid() ? scan.get() : Cached();
  if (!walked.ok()) return walked;  // nothing added yet: the batch is still good
  std::vector<DirNode>& dirs = walker.dirs();
  std::vector<FileJob>& files = walker.files();

  // Progress: the batch's byte count, and files done.
  uint64_t files_done = 0;
  const uint64_t bytes_base = b->progress_total;
  std::function<void(uint64_t)> saved = b->progress;
  if (options.progress)
    b->progress = [&](uint64_t total) { options.progress(total - bytes_base, files_done); };
  struct Restore {
    Batch::Impl* b;
    std::function<void(uint64_t)>* saved;
    ~Restore() { b->progress = std::move(*saved); }
  } restore{b, &saved};

  // Files: those the stat cache vouches for, then the rest.
  std::vector<size_t> to_read;
  {
    for (size_t i = 0; i < files.size(); ++i) {
      const Index::StatEntry& now = files[i].stamp;
      auto it = cached.find(now.path);
      if (it != cached.end()) {
        const Index::StatEntry& was = it->second.first;
        const std::optional<uint64_t> size = it->second.second;
        if (was.dev == now.dev && was.ino == now.ino && was.size == now.size && was.mtime_ns == now.mtime_ns &&
            was.ctime_ns == now.ctime_ns && size && *size == static_cast<uint64_t>(now.size)) {
          b->session.NoteReused(was.object);
          dirs[files[i].dir].tree.entries[files[i].slot].id = was.object;
          ++result.files_cached;
          result.bytes += *size;
          ++files_done;
          continue;
        }
      }
      to_read.push_back(i);
    }
  }
  const size_t first_result = b->session.results().size();
  ObjectRole member;
  member.member = true;
  auto path_of = [&](size_t i) { return dirs[files[i].dir].path + "/" + dirs[files[i].dir].tree.entries[files[i].slot].name; };
  auto record = [&](FileJob& job, const PublishResult& r) {
    TreeNode& e = dirs[job.dir].tree.entries[job.slot];
    e.id = *Digest::FromHex(r.id.substr(7));
    // What was read is the content, whatever the stat said a moment before.
    e.size = r.size;
    ++result.files_read;
    result.bytes += r.size;
    ++files_done;
    if (job.cacheable && static_cast<uint64_t>(job.stamp.size) == r.size) {
      job.stamp.object = e.id;
      b->stat_updates.push_back(job.stamp);
    }
  };
  // Files smaller than the chunk minimum are one chunk each, read, hashed
  // and compressed on the store's threads several at a time (a tree's
  // files are mostly small, and one at a time would leave cores idle);
  // their results are taken in order. Larger ones go through the ingest
  // pipeline, which has threads of its own.
  const uint32_t whole_below = b->store->meta.chunking.min_size;
  const uint32_t inline_max = b->store->meta.inline_max;
  const Compression compression = b->store->meta.compression;
  TaskPool pool(std::max(1u, b->store->threads));
  std::deque<std::pair<size_t, std::future<SmallFile>>> inflight;
  size_t next = 0;
  constexpr size_t kWindow = 64;
  Status failed;
  while (failed.ok()) {
    while (inflight.size() < kWindow && next < to_read.size()) {
      const size_t i = to_read[next++];
      if (files[i].stamp.size < static_cast<int64_t>(whole_below)) {
        inflight.emplace_back(i, pool.Submit([path = path_of(i), whole_below, inline_max, compression] {
          return ReadSmallFile(path, whole_below, inline_max, compression);
        }));
      } else {
        inflight.emplace_back(i, std::future<SmallFile>());
      }
    }
    if (inflight.empty()) break;
    auto [i, pending] = std::move(inflight.front());
    inflight.pop_front();
    if (b->Cancelled()) {
      failed = Status::IOError("interrupted");
      break;
    }
    std::optional<SmallFile> small;
    if (pending.valid()) {
      small.emplace(pending.get());
      if (!small->status.ok()) {
        failed = small->status;
        break;
      }
      if (small->whole) {
        small->chunk.data = small->bytes.data();
        Result<PublishResult> r = b->session.AddWhole(small->chunk, "", member);
        if (!r.ok()) {
          failed = r.status().WithContext("cannot publish " + path_of(i));
          break;
        }
        b->progress_total += r->size;
        if (b->progress) b->progress(b->progress_total);
        record(files[i], *r);
        continue;
      }
      // It grew past the chunk minimum since the walk: chunked as usual.
    }
    Result<PublishResult> r = b->AddFile(path_of(i), "", member);
    if (!r.ok()) {
      failed = r.status();
      break;
    }
    record(files[i], *r);
  }
  if (!failed.ok()) {
    b->failed = true;  // a tree is all or nothing
    return failed;
  }

  // Trees, children before parents (the walk added parents first).
  for (size_t i = dirs.size(); i-- > 0;) {
    DirNode& d = dirs[i];
    Result<std::string> encoded = EncodeTree(d.tree);
    if (!encoded.ok()) {
      b->failed = true;
      return encoded.status().WithContext(d.path);
    }
    ObjectRole role;
    role.tree = true;
    role.member = i != 0;
    role.refs = TreeRefs(d.tree);
    BytesSource src(encoded->data(), encoded->size(), d.path);
    Result<PublishResult> r = b->Add(src, i == 0 ? name : std::string(), role);
    if (!r.ok()) return r.status();  // Add marked the batch failed
    const Digest id = *Digest::FromHex(r->id.substr(7));
    if (i == 0) {
      result.id = r->id;
      result.name = name;
      b->trees.emplace_back(first_result, b->session.results().size() - 1);
    } else {
      dirs[d.parent].tree.entries[d.slot].id = id;
    }
    d.tree.entries.clear();
    d.tree.entries.shrink_to_fit();
  }
  if (options.progress) options.progress(result.bytes, files_done);
  return result;
}

Result<TreePublishResult> Store::PublishTree(const std::string& dir, const std::string& name,
                                             const TreePublishOptions& options) {
  std::unique_ptr<Batch> batch = NewBatch();
  Result<TreePublishResult> r = batch->AddTree(dir, name, options);
  if (!r.ok()) return r.status();
  Result<std::vector<PublishResult>> done = batch->Commit();
  if (!done.ok()) return done.status();
  for (const PublishResult& p : *done) {
    if (p.id != r->id) continue;
    r->version = p.version;
    r->new_bytes = p.new_bytes;
  }
  return r;
}

}  // namespace chunkstore

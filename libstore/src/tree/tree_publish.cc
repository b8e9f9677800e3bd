// SPDX-License-Identifier: Apache-2.0
// Publishing a directory as a tree (store.h, Store::PublishTree and
// Batch::AddTree): walk it, publish every file as a member object, then
// every directory's tree object from the bottom up, all in one batch.
//
// The walk (tree_walk.h) works on directory descriptors (openat with
// O_NOFOLLOW), so a symlink below the root is recorded as a link and never
// followed. Files the stat cache vouches for (index.h, StatEntry: same
// path, device, inode, size, mtime and ctime as when their content was
// published, and the object still in the store) are not read; what the
// walk learns about the others is recorded once the batch is committed.
// A file whose ctime is within a second of the walk's start is not
// recorded: it may still be changing within the clock's granularity, where
// a later change would leave its stamp as it was (git's "racy clean"
// problem).
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
#include <optional>
#include <vector>

#include "base/task_pool.h"
#include "format/compress.h"
#include "format/tree.h"
#include "hash/digest.h"
#include "ingest/ingest.h"
#include "store/batch_impl.h"
#include "store/store_impl.h"
#include "tree/fs.h"
#include "tree/tree_walk.h"

namespace chunkstore {

using namespace internal;

namespace {

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
    // A read of a regular file that stops short of what was asked has
    // met the end: where that is the length fstat gave, a second read
    // only to be told so would cost a system call per file.
    if (got < room && got == static_cast<size_t>(st.st_size)) break;
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
  // The stat cache is read while the directory is walked: the listers do
  // the kernel's work on threads of their own and this thread the index's
  // (SQLite's page cache then grows the main heap, where each new page is
  // not a system call of its own as it is in a thread's heap). The mark
  // comes first, so a removal of an object the cache names, after the scan
  // saw it, is seen at commit.
  CHUNKSTORE_RETURN_IF_ERROR(b->session.TakeMark());
  TreeWalker walker(b->store->root, b->store->threads, options, &result);
  CHUNKSTORE_RETURN_IF_ERROR(walker.Start(dir));
  Index::StatScan cached;
  if (!options.force_hash) {
    if (char* real = ::realpath(dir.c_str(), nullptr)) {
      std::string prefix = std::string(real) + "/";
      std::free(real);
      if (prefix == "//") prefix = "/";
      auto db = b->store->index.Lock();
      ReadTxn txn(db.get());
      // One scan below the root: a lookup per file would cost more than
      // the stat that decides it. A scan that fails vouches for nothing
      // (it leaves the result empty).
      if (txn.status().ok()) (void)db->ScanStat(prefix, &cached);
    }
  }
  Status walked = walker.Finish();
  if (!walked.ok()) return walked;  // nothing added yet: the batch is still good
  std::vector<DirNode>& dirs = walker.dirs();
  HugePageVector<FileJob>& files = walker.files();

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
      std::optional<uint64_t> size;
      if (const Index::StatEntry* found = cached.Find(now.path, &size)) {
        const Index::StatEntry& was = *found;
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
  // Small files go to the threads a run at a time: a task per file cost
  // two thread hand-offs per file, more than reading a small file costs.
  struct Run {
    std::vector<size_t> files;
    std::future<std::vector<SmallFile>> read;  // not valid: one file for the ingest pipeline
  };
  std::deque<Run> inflight;
  size_t inflight_files = 0;
  size_t next = 0;
  constexpr size_t kWindow = 64;       // files read ahead
  constexpr size_t kRunFiles = 8;      // files per task
  constexpr uint64_t kRunBytes = 256 << 10;
  auto small = [&](size_t i) { return files[i].stamp.size < static_cast<int64_t>(whole_below); };
  Status failed;
  auto take = [&](size_t i, std::optional<SmallFile> read) {
    if (read) {
      if (!read->status.ok()) return read->status;
      if (read->whole) {
        read->chunk.data = read->bytes.data();
        Result<PublishResult> r = b->session.AddWhole(read->chunk, "", member);
        if (!r.ok()) return r.status().WithContext("cannot publish " + path_of(i));
        b->progress_total += r->size;
        if (b->progress) b->progress(b->progress_total);
        record(files[i], *r);
        return Status::OK();
      }
      // It grew past the chunk minimum since the walk: chunked as usual.
    }
    Result<PublishResult> r = b->AddFile(path_of(i), "", member);
    if (!r.ok()) return r.status();
    record(files[i], *r);
    return Status::OK();
  };
  while (failed.ok()) {
    while (inflight_files < kWindow && next < to_read.size()) {
      Run run;
      if (!small(to_read[next])) {
        run.files.push_back(to_read[next++]);
      } else {
        std::vector<std::string> paths;
        uint64_t bytes = 0;
        while (next < to_read.size() && small(to_read[next]) && run.files.size() < kRunFiles &&
               (run.files.empty() || bytes + static_cast<uint64_t>(files[to_read[next]].stamp.size) <= kRunBytes)) {
          const size_t i = to_read[next++];
          bytes += static_cast<uint64_t>(files[i].stamp.size);
          run.files.push_back(i);
          paths.push_back(path_of(i));
        }
        run.read = pool.Submit([paths = std::move(paths), whole_below, inline_max, compression] {
          std::vector<SmallFile> out;
          out.reserve(paths.size());
          for (const std::string& path : paths) {
            out.push_back(ReadSmallFile(path, whole_below, inline_max, compression));
            if (!out.back().status.ok()) break;  // the run stops at its first failure, as the caller does
          }
          return out;
        });
      }
      inflight_files += run.files.size();
      inflight.push_back(std::move(run));
    }
    if (inflight.empty()) break;
    Run run = std::move(inflight.front());
    inflight.pop_front();
    inflight_files -= run.files.size();
    const bool was_read = run.read.valid();
    std::vector<SmallFile> read;
    if (was_read) read = run.read.get();
    for (size_t k = 0; k < run.files.size() && failed.ok(); ++k) {
      if (b->Cancelled()) {
        failed = Status::IOError("interrupted");
        break;
      }
      std::optional<SmallFile> one;
      if (was_read) {
        // A run that stopped early failed at its last file, where this
        // loop stops too.
        if (k >= read.size()) break;
        one.emplace(std::move(read[k]));
      }
      failed = take(run.files[k], std::move(one));
    }
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

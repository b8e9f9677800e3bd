// SPDX-License-Identifier: Apache-2.0
// The file system of `chunkstore mount` (mount_fs.h): the kernel's
// lookups, attributes, directory listings and reads, answered from a
// store's names, trees and verified readers.
//
// Three kinds of place: name directories (the root, and .versions/ with
// the same levels), whose content follows the catalog and is re-read at
// most once per refresh interval; trees and .objects/, whose content is
// fixed by an id and may be cached by the kernel for as long as it likes;
// and files, whose bytes come from one verified Reader per open handle.
#include "mount_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "mount_catalog.h"
#include "mount_nodes.h"
#include "mount_read.h"
#include "output.h"

namespace cli {

using chunkstore::NameEntry;
using chunkstore::Status;

namespace {

// Objects and trees never change under an id: the kernel may keep what it
// learned about them for a day.
constexpr double kImmutableTimeout = 86400;
// Bounds on what is kept of objects and trees (dropped whole when full).
constexpr size_t kFactsLimit = 1 << 16;
constexpr size_t kTreeEntriesLimit = 1 << 20;

using Kind = NodeKind;

// A directory listing, taken whole at opendir so that readdir's offsets
// stay stable while the catalog changes. A tree's entries are not copied:
// the handle shares the tree (a directory of millions of entries would
// otherwise be held again by every open handle).
struct DirHandle {
  struct Item {
    std::string name;
    mode_t type;
  };
  std::vector<Item> items;                        // all of a name directory's; "." and ".." of a tree's
  std::shared_ptr<const chunkstore::Tree> tree;  // a tree's entries follow its items

  size_t size() const { return items.size() + (tree ? tree->entries.size() : 0); }
  // Entry i's name and type.
  std::pair<const std::string*, mode_t> At(size_t i) const {
    if (i < items.size()) return {&items[i].name, items[i].type};
    const chunkstore::TreeEntry& e = tree->entries[i - items.size()];
    return {&e.name, mode_t(e.type == chunkstore::EntryType::kDirectory ? S_IFDIR
                            : e.type == chunkstore::EntryType::kSymlink ? S_IFLNK
                                                                        : S_IFREG)};
  }
};

// Publish times are seconds; the kernel takes nanoseconds. A time no
// clock gives (an index row says so) is held at the largest one shown.
int64_t SecondsToNs(int64_t seconds) {
  constexpr int64_t kMax = INT64_MAX / 1000000000;
  return std::clamp(seconds, -kMax, kMax) * 1000000000;
}

// Handles the kernel holds, owned here: a session ended by a signal does
// not wait for the kernel's last releases, and what is left goes with the
// file system. Shared: a read keeps its handle alive, since the kernel may
// release it, on another thread, as soon as it has the read's reply.
template <typename H>
class HandleTable {
 public:
  uint64_t Add(std::shared_ptr<H> h) {
    const uint64_t fh = reinterpret_cast<uint64_t>(h.get());
    std::lock_guard<std::mutex> l(mu_);
    map_[fh] = std::move(h);
    return fh;
  }
  std::shared_ptr<H> Get(uint64_t fh) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(fh);
    return it == map_.end() ? nullptr : it->second;
  }
  void Remove(uint64_t fh) {
    std::shared_ptr<H> gone;  // destroyed after the lock: a reader waits for its read-ahead
    std::lock_guard<std::mutex> l(mu_);
    auto it = map_.find(fh);
    if (it == map_.end()) return;
    gone = std::move(it->second);
    map_.erase(it);
  }

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<H>> map_;
};

struct ObjectFacts {
  bool tree = false;
  uint64_t size = 0;
  int64_t created = 0;
};

bool StartsWith(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

bool IsObjectId(const std::string& s) {
  if (s.size() != 71 || !StartsWith(s, "sha256:")) return false;
  return std::all_of(s.begin() + 7, s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

struct MountFs::Impl {
  chunkstore::Store& store;
  MountConfig config;
  std::function<void(const std::string&)> log;
  uid_t uid = ::getuid();
  gid_t gid = ::getgid();

  // Name directories have no time of their own: they show the mount's.
  const int64_t started_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch()).count();
  NodeTable nodes{started_ns};
  NameCatalog catalog;

  HandleTable<FileHandle> files;
  HandleTable<DirHandle> dirs;

  std::mutex cache_mu;
  std::unordered_map<std::string, ObjectFacts> facts;
  std::unordered_map<std::string, std::shared_ptr<const chunkstore::Tree>> trees;
  size_t tree_entries = 0;  // in trees
  // Trees being read and decoded: a lookup that wants one waits for that
  // read instead of making its own (each would hold a copy of it).
  std::unordered_map<std::string, std::shared_future<chunkstore::Result<std::shared_ptr<const chunkstore::Tree>>>>
      trees_loading;

  // The kernel's read-ahead for this mount, in KiB (sysfs); empty when
  // unknown. Set before the first request, read at every open.
  std::string read_ahead_file;
  uint32_t read_ahead_set_kib = 0;  // what mount.cc wrote there (MountFs::SetReadAhead)

  Impl(chunkstore::Store& s, const MountConfig& c, std::function<void(const std::string&)> l)
      : store(s), config(c), log(l), catalog(s, c.refresh_seconds, l) {}

  // ---- objects and trees (immutable, cached by id) ---------------------------

  chunkstore::Result<ObjectFacts> Facts(const std::string& id) {
    {
      std::lock_guard<std::mutex> l(cache_mu);
      auto it = facts.find(id);
      if (it != facts.end()) return it->second;
    }
    auto info = store.Stat(id);
    if (!info.ok()) return info.status();
    ObjectFacts f{info->tree, info->size, info->created};
    std::lock_guard<std::mutex> l(cache_mu);
    if (facts.size() >= kFactsLimit) facts.clear();
    facts[id] = f;
    return f;
  }

  chunkstore::Result<std::shared_ptr<const chunkstore::Tree>> OpenTree(const std::string& id) {
    using Loaded = chunkstore::Result<std::shared_ptr<const chunkstore::Tree>>;
    std::optional<std::promise<Loaded>> mine;  // made only when this call reads the tree
    {
      std::unique_lock<std::mutex> l(cache_mu);
      auto it = trees.find(id);
      if (it != trees.end()) return it->second;
      auto loading = trees_loading.find(id);
      if (loading != trees_loading.end()) {
        std::shared_future<Loaded> theirs = loading->second;
        l.unlock();
        return theirs.get();
      }
      mine.emplace();
      trees_loading.emplace(id, mine->get_future().share());
    }
    // Never throws: the lookups waiting for this read must get an answer,
    // and the entry in trees_loading must go.
    Loaded got = [&]() -> Loaded {
      try {
        auto t = store.OpenTree(id);
        if (!t.ok()) return t.status();
        return std::make_shared<const chunkstore::Tree>(std::move(*t));
      } catch (const std::bad_alloc&) {
        return chunkstore::Status::IOError("tree " + id + " is too large to hold in memory");
      }
    }();
    std::lock_guard<std::mutex> l(cache_mu);
    if (got.ok()) {
      // The cache is dropped whole when full; a tree larger than the
      // bound is kept alone (it is what the next lookups want).
      if (tree_entries + (*got)->entries.size() > kTreeEntriesLimit) trees.clear(), tree_entries = 0;
      if (trees.emplace(id, *got).second) tree_entries += (*got)->entries.size();
    }
    mine->set_value(got);
    trees_loading.erase(id);
    return got;
  }

  // A node for an object: a directory for a tree, else a file.
  chunkstore::Result<Node> ObjectNode(const std::string& id, uint32_t file_mode, int64_t mtime_ns, bool immutable) {
    auto f = Facts(id);
    if (!f.ok()) return f.status();
    Node n;
    n.id = id;
    n.immutable = immutable;
    if (f->tree) {
      auto t = OpenTree(id);
      if (!t.ok()) return t.status();
      n.kind = Kind::kTreeDir;
      n.mode = (*t)->mode & 07777;
      n.mtime_ns = (*t)->mtime_ns;
    } else {
      n.kind = Kind::kFile;
      n.size = f->size;
      n.mode = file_mode;
      n.mtime_ns = mtime_ns ? mtime_ns : SecondsToNs(f->created);
    }
    return n;
  }

  double Timeout(const Node& n) const { return n.immutable ? kImmutableTimeout : config.refresh_seconds; }

  struct stat Attr(fuse_ino_t ino, const Node& n) const {
    struct stat st {};
    st.st_ino = ino;
    st.st_uid = uid;
    st.st_gid = gid;
    // Readers that size their reads by it (cat, cp) then ask for 1 MiB at
    // a time, and the kernel reads ahead as much per request.
    st.st_blksize = 1 << 20;
    switch (n.kind) {
      case Kind::kFile:
        st.st_mode = S_IFREG | n.mode;
        st.st_nlink = 1;
        st.st_size = static_cast<off_t>(n.size);
        st.st_blocks = static_cast<blkcnt_t>((n.size + 511) / 512);
        break;
      case Kind::kSymlink:
        st.st_mode = S_IFLNK | 0777;
        st.st_nlink = 1;
        st.st_size = static_cast<off_t>(n.target.size());
        break;
      default:
        st.st_mode = S_IFDIR | n.mode;
        st.st_nlink = 2;
        break;
    }
    st.st_mtim.tv_sec = n.mtime_ns / 1000000000;
    st.st_mtim.tv_nsec = n.mtime_ns % 1000000000;
    if (st.st_mtim.tv_nsec < 0) st.st_mtim.tv_sec -= 1, st.st_mtim.tv_nsec += 1000000000;
    st.st_ctim = st.st_mtim;
    st.st_atim = st.st_mtim;
    return st;
  }

  // errno for a library error; damage and failures are logged, naming
  // what was being done.
  int Errno(const Status& s, const std::string& what) {
    if (s.IsNotFound()) return ENOENT;
    log("chunkstore: mount: " + what + ": " + Printable(s.ToString()));
    if (s.IsPermissionDenied()) return EACCES;
    if (s.IsInvalidArgument()) return EINVAL;
    return EIO;
  }

  // ---- lookups ---------------------------------------------------------------

  // What sits at name in the name directory with prefix (versions: in
  // .versions/). A directory wins over a file of the same path.
  chunkstore::Result<Node> LookupName(const Node& dir, const std::string& name) {
    const bool versions = dir.kind == Kind::kVersionsDir;
    auto all = catalog.Current(true);
    const NameList& v = *all;
    const std::string below = dir.prefix + name + "/";
    if (NameCatalog::AnyBelow(v, below)) {
      Node n;
      n.kind = dir.kind;
      n.prefix = below;
      n.mtime_ns = started_ns;
      n.mode = 0555;
      return n;
    }
    if (!versions) {
      const NameEntry* e = NameCatalog::Find(v, dir.prefix + name);
      if (!e) return Status::NotFound(name);
      return ObjectNode(e->id, 0444, SecondsToNs(e->created), false);
    }
    // NAME@N
    const size_t at = name.rfind('@');
    if (at == std::string::npos || at == 0 || at + 1 == name.size() || name[at + 1] == '0' ||
        !std::all_of(name.begin() + at + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        name.size() - at > 19)
      return Status::NotFound(name);
    const std::string full = dir.prefix + name.substr(0, at);
    const int64_t version = std::stoll(name.substr(at + 1));
    if (!NameCatalog::Find(v, full)) return Status::NotFound(name);
    auto history = store.History(full);
    if (!history.ok()) return history.status();
    for (const NameEntry& e : *history)
      if (e.version == version) return ObjectNode(e.id, 0444, SecondsToNs(e.created), false);
    return Status::NotFound(name);
  }

  // *absent: the tree was read and has no such entry, an absence that
  // holds for as long as the tree's id does.
  chunkstore::Result<Node> LookupIn(fuse_ino_t parent, const Node& dir, const std::string& name, bool* absent) {
    switch (dir.kind) {
      case Kind::kNameDir:
        if (parent == FUSE_ROOT_ID && (name == ".versions" || name == ".objects")) {
          Node n = *nodes.Get(name == ".versions" ? NodeTable::kVersions : NodeTable::kObjects);
          return n;
        }
        return LookupName(dir, name);
      case Kind::kVersionsDir:
        return LookupName(dir, name);
      case Kind::kObjectsDir:
        if (!IsObjectId(name)) return Status::NotFound(name);
        return ObjectNode(name, 0444, 0, true);
      case Kind::kTreeDir: {
        auto t = OpenTree(dir.id);
        if (!t.ok()) return t.status();
        const auto& e = (*t)->entries;
        auto it = std::lower_bound(e.begin(), e.end(), name,
                                   [](const chunkstore::TreeEntry& x, const std::string& k) { return x.name < k; });
        if (it == e.end() || it->name != name) {
          *absent = true;
          return Status::NotFound(name);
        }
        Node n;
        n.immutable = true;
        n.mtime_ns = it->mtime_ns;
        n.mode = it->mode & 07777;
        if (it->type == chunkstore::EntryType::kSymlink) {
          n.kind = Kind::kSymlink;
          n.target = it->target;
          return n;
        }
        if (it->type == chunkstore::EntryType::kDirectory) {
          auto sub = ObjectNode(it->id, 0, 0, true);
          // Not an absence the kernel may remember: the tree is damaged.
          if (!sub.ok() && sub.status().IsNotFound())
            return Status::Corruption("the tree " + dir.id + " names " + it->id + " for " + name +
                                      ", which the store does not have");
          if (sub.ok() && sub->kind != Kind::kTreeDir)
            return Status::Corruption("the tree " + dir.id + " says " + name + " is a directory, but " + it->id +
                                      " is a file");
          return sub;
        }
        n.kind = Kind::kFile;
        n.id = it->id;
        // The size is the object's: a tree that says otherwise is damaged,
        // and a size taken from it would cut reads short (or pad them)
        // with no error.
        auto f = Facts(it->id);
        if (!f.ok()) {
          if (f.status().IsNotFound())
            return Status::Corruption("the tree " + dir.id + " names " + it->id + " for " + name +
                                      ", which the store does not have");
          return f.status();
        }
        if (f->tree || f->size != it->size)
          return Status::Corruption("the tree " + dir.id + " says " + name + " is " + std::to_string(it->size) +
                                    " bytes of " + it->id + ", which is " +
                                    (f->tree ? std::string("a tree") : std::to_string(f->size) + " bytes"));
        n.size = it->size;
        return n;
      }
      default:
        return Status::InvalidArgument("not a directory");
    }
  }

  // ---- listings --------------------------------------------------------------

  chunkstore::Result<std::vector<DirHandle::Item>> List(const Node& dir, bool root) {
    std::vector<DirHandle::Item> items{{".", S_IFDIR}, {"..", S_IFDIR}};
    if (dir.kind == Kind::kObjectsDir) return items;  // ids are looked up, never listed
    if (root) items.push_back({".objects", S_IFDIR}), items.push_back({".versions", S_IFDIR});
    const bool versions = dir.kind == Kind::kVersionsDir;
    auto all = catalog.Current(true);
    const NameList& v = *all;
    // Names sort with '-' and '.' before '/': collect the levels below
    // first, then let a directory win over a file of the same path
    // (versions, NAME@N, never clash with a directory).
    std::set<std::string> dirs;
    std::map<std::string, const NameEntry*> files;
    for (auto it = NameCatalog::First(v, dir.prefix); it != v.end() && StartsWith(it->name, dir.prefix); ++it) {
      const std::string rest = it->name.substr(dir.prefix.size());
      const size_t slash = rest.find('/');
      if (slash != std::string::npos) dirs.insert(rest.substr(0, slash));
      else files[rest] = &*it;
    }
    for (const auto& d : dirs) items.push_back({d, S_IFDIR});
    for (const auto& [name, entry] : files) {
      if (versions) {
        auto history = store.History(entry->name);
        if (!history.ok()) continue;  // removed since the listing
        for (auto h = history->rbegin(); h != history->rend(); ++h) {
          auto f = Facts(h->id);
          items.push_back({name + "@" + std::to_string(h->version), mode_t(f.ok() && f->tree ? S_IFDIR : S_IFREG)});
        }
      } else if (!dirs.count(name)) {
        auto f = Facts(entry->id);
        items.push_back({name, mode_t(f.ok() && f->tree ? S_IFDIR : S_IFREG)});
      }
    }
    std::sort(items.begin() + 2, items.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return items;
  }
};

MountFs::MountFs(chunkstore::Store& store, const MountConfig& config, std::function<void(const std::string&)> log)
    : impl_(std::make_unique<Impl>(store, config, std::move(log))) {}
MountFs::~MountFs() = default;
Status MountFs::Load() { return impl_->catalog.Reload(); }
void* MountFs::UserData() { return impl_.get(); }

namespace {

MountFs::Impl* FsOf(fuse_req_t req) { return static_cast<MountFs::Impl*>(fuse_req_userdata(req)); }

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  MountFs::Impl* fs = FsOf(req);
  auto dir = fs->nodes.Get(parent);
  if (!dir) return (void)fuse_reply_err(req, ENOENT);
  bool absent = false;
  auto n = fs->LookupIn(parent, *dir, name, &absent);
  if (!n.ok()) {
    if (absent) {
      // A tree never gains an entry: the kernel may remember the absence.
      fuse_entry_param e{};
      e.entry_timeout = kImmutableTimeout;
      return (void)fuse_reply_entry(req, &e);
    }
    return (void)fuse_reply_err(req, fs->Errno(n.status(), "lookup of " + Printable(name)));
  }
  fuse_entry_param e{};
  e.ino = fs->nodes.Intern(parent, name, *n);
  e.attr = fs->Attr(e.ino, *n);
  e.attr_timeout = e.entry_timeout = fs->Timeout(*n);
  // The kernel counts only a lookup it was told of.
  if (fuse_reply_entry(req, &e) != 0) fs->nodes.Forget(e.ino, 1);
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  FsOf(req)->nodes.Forget(ino, nlookup);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) FsOf(req)->nodes.Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  MountFs::Impl* fs = FsOf(req);
  auto n = fs->nodes.Get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  const struct stat st = fs->Attr(ino, *n);
  fuse_reply_attr(req, &st, fs->Timeout(*n));
}

void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto n = FsOf(req)->nodes.Get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->kind != Kind::kSymlink) return (void)fuse_reply_err(req, EINVAL);
  fuse_reply_readlink(req, n->target.c_str());
}

void OpInit(void* userdata, fuse_conn_info* conn) {
  auto* fs = static_cast<MountFs::Impl*>(userdata);
  // The kernel keeps the smaller of this and what the mount's read-ahead
  // is when the answer arrives: what mount.cc wrote there, if it could
  // (else the kernel's offer, which libfuse left here, stands).
  if (fs->read_ahead_set_kib > 0) conn->max_readahead = fs->read_ahead_set_kib * 1024;
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  MountFs::Impl* fs = FsOf(req);
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) return (void)fuse_reply_err(req, EROFS);
  auto n = fs->nodes.Get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->kind != Kind::kFile) return (void)fuse_reply_err(req, EISDIR);
  auto reader = fs->store.OpenReader(n->id);
  if (!reader.ok()) return (void)fuse_reply_err(req, fs->Errno(reader.status(), "cannot open " + n->id));
  auto h = std::make_shared<FileHandle>();
  h->reader = std::move(*reader);
  h->window = SequentialWindow(fs->read_ahead_file);
  h->remote = fs->store.is_bucket();
  fi->fh = fs->files.Add(std::move(h));
  // The inode stands for one immutable object: what the kernel cached from
  // an earlier open is still right.
  fi->keep_cache = 1;
  if (fuse_reply_open(req, fi) != 0) fs->files.Remove(fi->fh);
}

void OpRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  MountFs::Impl* fs = FsOf(req);
  auto h = fs->files.Get(fi->fh);
  if (!h) return (void)fuse_reply_err(req, EBADF);
  const uint64_t offset = static_cast<uint64_t>(off);
  Status failed;
  {
    std::lock_guard<std::mutex> l(h->mu);
    failed = AnswerRead(req, *h, offset, size);
  }
  if (!failed.ok()) {
    // Nothing unverified is handed out: the whole request fails.
    auto n = fs->nodes.Get(ino);
    const std::string what = n ? n->id : "inode " + std::to_string(ino);
    // A chunk gone from under an open file is damage to this read, not a
    // missing file.
    if (failed.IsNotFound()) failed = Status::Corruption(failed.message());
    fuse_reply_err(req, fs->Errno(failed, "read of " + what + " at offset " + std::to_string(offset) + " failed"));
  }
}

void OpRelease(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  MountFs::Impl* fs = FsOf(req);
  fs->files.Remove(fi->fh);
  fuse_reply_err(req, 0);
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  MountFs::Impl* fs = FsOf(req);
  auto n = fs->nodes.Get(ino);
  if (!n) return (void)fuse_reply_err(req, ENOENT);
  if (n->kind == Kind::kFile || n->kind == Kind::kSymlink) return (void)fuse_reply_err(req, ENOTDIR);
  auto h = std::make_shared<DirHandle>();
  if (n->kind == Kind::kTreeDir) {
    auto t = fs->OpenTree(n->id);
    if (!t.ok()) return (void)fuse_reply_err(req, fs->Errno(t.status(), "cannot list a directory"));
    h->items = {{".", S_IFDIR}, {"..", S_IFDIR}};
    h->tree = std::move(*t);
  } else {
    auto items = fs->List(*n, ino == FUSE_ROOT_ID);
    if (!items.ok()) return (void)fuse_reply_err(req, fs->Errno(items.status(), "cannot list a directory"));
    h->items = std::move(*items);
  }
  fi->fh = fs->dirs.Add(std::move(h));
  // A tree's listing is fixed by its id; a name directory's is not.
  fi->cache_readdir = n->kind == Kind::kTreeDir ? 1 : 0;
  fi->keep_cache = fi->cache_readdir;
  if (fuse_reply_open(req, fi) != 0) fs->dirs.Remove(fi->fh);
}

void OpReaddir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  auto h = FsOf(req)->dirs.Get(fi->fh);
  if (!h) return (void)fuse_reply_err(req, EBADF);
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(off); i < h->size(); ++i) {
    struct stat st {};
    // Inode numbers come from lookups; a listing says "unknown", as
    // libfuse's own high-level API does.
    st.st_ino = 0xffffffffu;
    const auto [name, type] = h->At(i);
    st.st_mode = type;
    const size_t need =
        fuse_add_direntry(req, buf.data() + used, size - used, name->c_str(), &st, static_cast<off_t>(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  MountFs::Impl* fs = FsOf(req);
  fs->dirs.Remove(fi->fh);
  fuse_reply_err(req, 0);
}

void OpStatfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs sv {};
  sv.f_bsize = 4096;
  sv.f_frsize = 4096;
  sv.f_namemax = NAME_MAX;
  sv.f_flag = ST_RDONLY;
  fuse_reply_statfs(req, &sv);
}

const fuse_lowlevel_ops kOps = [] {
  fuse_lowlevel_ops o{};
  o.init = OpInit;
  o.lookup = OpLookup;
  o.forget = OpForget;
  o.forget_multi = OpForgetMulti;
  o.getattr = OpGetattr;
  o.readlink = OpReadlink;
  o.open = OpOpen;
  o.read = OpRead;
  o.release = OpRelease;
  o.opendir = OpOpendir;
  o.readdir = OpReaddir;
  o.releasedir = OpReleasedir;
  o.statfs = OpStatfs;
  return o;
}();

}  // namespace

const fuse_lowlevel_ops* MountFs::Ops() { return &kOps; }

void MountFs::SetReadAhead(const std::string& file, uint32_t set_kib) {
  impl_->read_ahead_file = file;
  impl_->read_ahead_set_kib = set_kib;
}

}  // namespace cli

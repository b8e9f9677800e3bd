// SPDX-License-Identifier: Apache-2.0
// Reading trees: a tree object read whole and checked, paths inside trees
// (REF:PATH refs), listing, walking and comparing trees. Publishing and
// restoring, which work on the file system, are in tree/.
#include "store/trees.h"

#include <algorithm>

#include "index/refs.h"
#include "read/reader.h"

namespace chunkstore {

using namespace internal;

const char* EntryTypeName(EntryType type) {
  switch (type) {
    case EntryType::kFile: return "file";
    case EntryType::kDirectory: return "dir";
    case EntryType::kSymlink: return "symlink";
  }
  return "unknown";
}

const char* ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kAdded: return "added";
    case ChangeKind::kRemoved: return "removed";
    case ChangeKind::kModified: return "modified";
    case ChangeKind::kType: return "type";
    case ChangeKind::kMetadata: return "metadata";
  }
  return "unknown";
}

namespace internal {

Result<TreeData> ReadTree(Store::Impl* impl, const Digest& id) {
  const std::string oid = id.ObjectId();
  std::unique_ptr<Reader> reader;
  {
    auto db = impl->index.Lock();
    Result<bool> tree = db->IsTree(id);
    if (!tree.ok()) return tree.status();
    if (!*tree) {
      Result<std::optional<ObjectRow>> row = db->FindObject(id);
      if (!row.ok()) return row.status();
      if (!row->has_value()) return Status::NotFound("no object " + oid);
      return Status::InvalidArgument(oid + " is not a tree");
    }
    Result<std::unique_ptr<Reader>> r = OpenObjectReader(impl->read_source(), *db, oid, false);
    if (!r.ok()) return r.status();
    reader = std::move(*r);
  }
  if (reader->size() > kMaxTreeBytes)
    return Status::Corruption("tree " + oid + " is " + std::to_string(reader->size()) + " bytes, over the limit", oid);
  // A whole read in order: the last byte comes only once the content's
  // SHA-256 is the tree's id, so the tree is the one asked for.
  std::string bytes(reader->size(), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    Result<size_t> n = reader->Read(bytes.data() + got, bytes.size() - got);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    got += *n;
  }
  if (got != bytes.size()) return Status::Corruption("tree " + oid + " ends early", oid);
  Result<TreeData> tree = DecodeTree(bytes);
  if (!tree.ok()) return Status::Corruption("tree " + oid + " is damaged: " + tree.status().message(), oid);
  return tree;
}

namespace {

// Walks path (components separated by '/') down from the tree root.
Result<TreeEntry> FollowPath(Store::Impl* impl, const Digest& root, const std::string& path, Digest* id_out) {
  Digest dir = root;
  TreeEntry here;
  here.type = EntryType::kDirectory;
  here.id = root.ObjectId();
  bool first = true;
  std::string walked;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(at, slash - at);
    at = slash + 1;
    if (part.empty() || part == ".") {
      if (slash == path.size()) break;
      continue;
    }
    if (part == "..") return Status::InvalidArgument("a path inside a tree cannot hold '..'");
    if (!first && here.type != EntryType::kDirectory)
      return Status::NotFound(walked + " is a " + EntryTypeName(here.type) + ", not a directory");
    first = false;
    Result<TreeData> tree = ReadTree(impl, dir);
    if (!tree.ok()) return tree.status();
    auto it = std::lower_bound(tree->entries.begin(), tree->entries.end(), part,
                               [](const TreeNode& e, const std::string& n) { return e.name < n; });
    walked += (walked.empty() ? "" : "/") + part;
    if (it == tree->entries.end() || it->name != part) return Status::NotFound("no " + walked + " in the tree");
    here = ToPublicEntry(*it);
    here.name = walked;
    dir = it->id;
    if (slash == path.size()) break;
  }
  *id_out = dir;
  return here;
}

// Splits a REF:PATH ref: the first ':' (after a "sha256:" prefix) whose
// left side resolves to a tree. nullopt when none does.
Result<std::optional<std::pair<Digest, std::string>>> SplitTreePath(Store::Impl* impl, const std::string& ref) {
  using Split = std::optional<std::pair<Digest, std::string>>;
  const size_t from = ref.rfind("sha256:", 0) == 0 ? 7 : 0;
  for (size_t colon = ref.find(':', from); colon != std::string::npos; colon = ref.find(':', colon + 1)) {
    const std::string left = ref.substr(0, colon);
    if (left.empty()) continue;
    auto db = impl->index.Lock();
    Result<Digest> d = ResolveRef(*db, left, nullptr);
    if (!d.ok()) {
      if (d.status().IsNotFound() || d.status().IsInvalidArgument()) continue;
      return d.status();
    }
    Result<bool> tree = db->IsTree(*d);
    if (!tree.ok()) return tree.status();
    if (*tree) return Split(std::make_pair(*d, ref.substr(colon + 1)));
  }
  return Split();
}

}  // namespace

Result<std::string> ExpandRef(Store::Impl* impl, const std::string& ref) {
  const size_t from = ref.rfind("sha256:", 0) == 0 ? 7 : 0;
  if (ref.find(':', from) == std::string::npos) return ref;
  {
    // A ref in its own right (a name with a ':') wins.
    auto db = impl->index.Lock();
    Result<Digest> whole = ResolveRef(*db, ref, nullptr);
    if (whole.ok()) return ref;
    if (!whole.status().IsNotFound() && !whole.status().IsInvalidArgument()) return whole.status();
  }
  Result<std::optional<std::pair<Digest, std::string>>> split = SplitTreePath(impl, ref);
  if (!split.ok()) return split.status();
  if (!split->has_value()) return ref;  // the caller's resolution gives the error
  Digest id;
  Result<TreeEntry> e = FollowPath(impl, (*split)->first, (*split)->second, &id);
  if (!e.ok()) return e.status();
  if (e->type == EntryType::kSymlink)
    return Status::InvalidArgument(e->name + " is a symlink (to " + e->target.substr(0, 256) + "), not followed");
  return id.ObjectId();
}

Result<Digest> ResolveTree(Store::Impl* impl, const std::string& ref) {
  Result<std::string> expanded = ExpandRef(impl, ref);
  if (!expanded.ok()) return expanded.status();
  Result<Digest> d = ResolveRef(*impl->index.Lock(), *expanded, nullptr);
  if (!d.ok()) return d.status();
  Result<bool> tree = impl->index.Lock()->IsTree(*d);
  if (!tree.ok()) return tree.status();
  if (!*tree) return Status::InvalidArgument(ref + " is not a tree (" + d->ObjectId() + ")");
  return d;
}

}  // namespace internal

Result<Tree> Store::OpenTree(const std::string& ref) {
  Result<Digest> id = ResolveTree(impl_.get(), ref);
  if (!id.ok()) return id.status();
  Result<TreeData> data = ReadTree(impl_.get(), *id);
  if (!data.ok()) return data.status();
  Tree t;
  t.id = id->ObjectId();
  t.mode = data->mode;
  t.mtime_ns = data->mtime_ns;
  t.entries.reserve(data->entries.size());
  for (const TreeNode& n : data->entries) t.entries.push_back(ToPublicEntry(n));
  return t;
}

Result<TreeEntry> Store::LookupPath(const std::string& ref) {
  const size_t from = ref.rfind("sha256:", 0) == 0 ? 7 : 0;
  std::optional<std::pair<Digest, std::string>> split;
  if (ref.find(':', from) != std::string::npos) {
    Result<Digest> whole = ResolveRef(*impl_->index.Lock(), ref, nullptr);
    if (!whole.ok()) {
      Result<std::optional<std::pair<Digest, std::string>>> s = SplitTreePath(impl_.get(), ref);
      if (!s.ok()) return s.status();
      split = std::move(*s);
    }
  }
  Digest id;
  TreeEntry e;
  if (split) {
    Result<TreeEntry> found = FollowPath(impl_.get(), split->first, split->second, &id);
    if (!found.ok()) return found.status();
    e = std::move(*found);
    if (e.type != EntryType::kDirectory) return e;
  } else {
    ObjectRow row;
    Result<Digest> d = ResolveRef(*impl_->index.Lock(), ref, &row);
    if (!d.ok()) return d.status();
    id = *d;
    e.id = id.ObjectId();
    Result<bool> tree = impl_->index.Lock()->IsTree(id);
    if (!tree.ok()) return tree.status();
    if (!*tree) {
      e.type = EntryType::kFile;
      e.size = row.size;
      return e;
    }
    e.type = EntryType::kDirectory;
  }
  Result<TreeData> data = ReadTree(impl_.get(), id);
  if (!data.ok()) return data.status();
  e.mode = data->mode;
  e.mtime_ns = data->mtime_ns;
  return e;
}

namespace {

Status WalkData(Store::Impl* impl, const TreeData& data, const std::string& prefix, int depth,
                const std::function<Status(const TreeEntry&)>& fn) {
  if (depth > kMaxTreeDepth)
    return Status::Corruption("trees nest deeper than " + std::to_string(kMaxTreeDepth) + " levels at " + prefix);
  for (const TreeNode& n : data.entries) {
    TreeEntry e = ToPublicEntry(n);
    e.name = prefix + n.name;
    if (n.type != EntryType::kDirectory) {
      CHUNKSTORE_RETURN_IF_ERROR(fn(e));
      continue;
    }
    Result<TreeData> sub = ReadTree(impl, n.id);
    if (!sub.ok()) return sub.status();
    e.mode = sub->mode;
    e.mtime_ns = sub->mtime_ns;
    CHUNKSTORE_RETURN_IF_ERROR(fn(e));
    CHUNKSTORE_RETURN_IF_ERROR(WalkData(impl, *sub, e.name + "/", depth + 1, fn));
  }
  return Status::OK();
}

Status Walk(Store::Impl* impl, const Digest& id, const std::string& prefix, int depth,
            const std::function<Status(const TreeEntry&)>& fn) {
  Result<TreeData> data = ReadTree(impl, id);
  if (!data.ok()) return data.status();
  return WalkData(impl, *data, prefix, depth, fn);
}

bool SameMetadata(const TreeEntry& a, const TreeEntry& b) { return a.mode == b.mode && a.mtime_ns == b.mtime_ns; }

Status Diff(Store::Impl* impl, const Digest& a, const Digest& b, const std::string& prefix, int depth,
            std::vector<TreeChange>* out) {
  if (depth > kMaxTreeDepth) return Status::Corruption("trees nest deeper than " + std::to_string(kMaxTreeDepth) + " levels at " + prefix);
  Result<TreeData> ta = ReadTree(impl, a);
  if (!ta.ok()) return ta.status();
  Result<TreeData> tb = ReadTree(impl, b);
  if (!tb.ok()) return tb.status();
  // Everything below a directory that only one side has.
  auto all_below = [&](const TreeNode& n, const std::string& path, ChangeKind kind) -> Status {
    return Walk(impl, n.id, path + "/", depth + 1, [&](const TreeEntry& e) {
      TreeChange c;
      c.kind = kind;
      c.path = e.name;
      (kind == ChangeKind::kAdded ? c.after : c.before) = e;
      out->push_back(std::move(c));
      return Status::OK();
    });
  };
  auto with_dir_meta = [&](const TreeNode& n, TreeEntry* e) -> Status {
    if (n.type != EntryType::kDirectory) return Status::OK();
    Result<TreeData> sub = ReadTree(impl, n.id);
    if (!sub.ok()) return sub.status();
    e->mode = sub->mode;
    e->mtime_ns = sub->mtime_ns;
    return Status::OK();
  };
  size_t i = 0, j = 0;
  const auto& ea = ta->entries;
  const auto& eb = tb->entries;
  while (i < ea.size() || j < eb.size()) {
    const bool take_a = j == eb.size() || (i < ea.size() && ea[i].name < eb[j].name);
    const bool take_b = i == ea.size() || (j < eb.size() && eb[j].name < ea[i].name);
    if (take_a || take_b) {
      const TreeNode& n = take_a ? ea[i++] : eb[j++];
      TreeChange c;
      c.kind = take_a ? ChangeKind::kRemoved : ChangeKind::kAdded;
      c.path = prefix + n.name;
      TreeEntry& e = take_a ? c.before : c.after;
      e = ToPublicEntry(n);
      e.name = c.path;
      CHUNKSTORE_RETURN_IF_ERROR(with_dir_meta(n, &e));
      out->push_back(c);
      if (n.type == EntryType::kDirectory) CHUNKSTORE_RETURN_IF_ERROR(all_below(n, c.path, c.kind));
      continue;
    }
    const TreeNode& x = ea[i++];
    const TreeNode& y = eb[j++];
    const std::string path = prefix + x.name;
    TreeChange c;
    c.path = path;
    c.before = ToPublicEntry(x);
    c.after = ToPublicEntry(y);
    c.before.name = c.after.name = path;
    if (x.type != y.type) {
      CHUNKSTORE_RETURN_IF_ERROR(with_dir_meta(x, &c.before));
      CHUNKSTORE_RETURN_IF_ERROR(with_dir_meta(y, &c.after));
      c.kind = ChangeKind::kType;
      out->push_back(c);
      if (x.type == EntryType::kDirectory) CHUNKSTORE_RETURN_IF_ERROR(all_below(x, path, ChangeKind::kRemoved));
      if (y.type == EntryType::kDirectory) CHUNKSTORE_RETURN_IF_ERROR(all_below(y, path, ChangeKind::kAdded));
      continue;
    }
    if (x.type == EntryType::kDirectory) {
      if (x.id == y.id) continue;  // the same tree: nothing below differs
      CHUNKSTORE_RETURN_IF_ERROR(with_dir_meta(x, &c.before));
      CHUNKSTORE_RETURN_IF_ERROR(with_dir_meta(y, &c.after));
      if (!SameMetadata(c.before, c.after)) {
        c.kind = ChangeKind::kMetadata;
        out->push_back(c);
      }
      CHUNKSTORE_RETURN_IF_ERROR(Diff(impl, x.id, y.id, path + "/", depth + 1, out));
      continue;
    }
    const bool content = x.type == EntryType::kFile ? (x.id != y.id || x.size != y.size) : x.target != y.target;
    if (content) {
      c.kind = ChangeKind::kModified;
      out->push_back(c);
    } else if (!SameMetadata(c.before, c.after)) {
      c.kind = ChangeKind::kMetadata;
      out->push_back(c);
    }
  }
  return Status::OK();
}

}  // namespace

Status Store::WalkTree(const std::string& ref, const std::function<Status(const TreeEntry&)>& fn) {
  Result<Digest> id = ResolveTree(impl_.get(), ref);
  if (!id.ok()) return id.status();
  return Walk(impl_.get(), *id, "", 0, fn);
}

Result<std::vector<TreeChange>> Store::DiffTrees(const std::string& from, const std::string& to) {
  Result<Digest> a = ResolveTree(impl_.get(), from);
  if (!a.ok()) return a.status();
  Result<Digest> b = ResolveTree(impl_.get(), to);
  if (!b.ok()) return b.status();
  std::vector<TreeChange> out;
  if (*a == *b) return out;
  Result<TreeData> ta = ReadTree(impl_.get(), *a);
  if (!ta.ok()) return ta.status();
  Result<TreeData> tb = ReadTree(impl_.get(), *b);
  if (!tb.ok()) return tb.status();
  if (ta->mode != tb->mode || ta->mtime_ns != tb->mtime_ns) {
    TreeChange c;
    c.kind = ChangeKind::kMetadata;
    c.path = ".";
    c.before.name = c.after.name = ".";
    c.before.type = c.after.type = EntryType::kDirectory;
    c.before.id = a->ObjectId();
    c.after.id = b->ObjectId();
    c.before.mode = ta->mode;
    c.before.mtime_ns = ta->mtime_ns;
    c.after.mode = tb->mode;
    c.after.mtime_ns = tb->mtime_ns;
    out.push_back(std::move(c));
  }
  CHUNKSTORE_RETURN_IF_ERROR(Diff(impl_.get(), *a, *b, "", 0, &out));
  return out;
}

}  // namespace chunkstore

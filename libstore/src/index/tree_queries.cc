// SPDX-License-Identifier: Apache-2.0
// The index's queries about trees (which objects are trees, and what each
// names) and the stat cache of tree publishes. See index.h.
#include "index/sql.h"

namespace chunkstore::internal {

Status Index::InsertTree(const Digest& id, const std::vector<Digest>& refs) {
  {
    Use u(st_->insert_tree);
    u.Id(1, id);
    if (u.Step() != SQLITE_DONE) return Error("cannot record a tree");
  }
  for (const Digest& child : refs) {
    Use u(st_->insert_tree_ref);
    u.Id(1, id).Id(2, child);
    if (u.Step() != SQLITE_DONE) return Error("cannot record a tree");
  }
  return Status::OK();
}

Result<bool> Index::IsTree(const Digest& id) {
  Use u(st_->is_tree);
  u.Id(1, id);
  const int rc = u.Step();
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) return Error("cannot look up a tree");
  return false;
}

Result<std::vector<Digest>> Index::TreeRefsOf(const Digest& id) {
  Use u(st_->refs_of);
  u.Id(1, id);
  std::vector<Digest> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    Digest d;
    if (!u.ColId(0, &d)) return Status::Corruption("a tree row of the index names a malformed id");
    out.push_back(d);
  }
  if (rc != SQLITE_DONE) return Error("cannot read a tree's refs");
  return out;
}

Result<std::vector<Digest>> Index::TreesHolding(const Digest& child, int limit) {
  Use u(st_->trees_holding);
  u.Id(1, child).Int(2, limit);
  std::vector<Digest> out;
  int rc;
  while ((rc = u.Step()) == SQLITE_ROW) {
    Digest d;
    if (u.ColId(0, &d)) out.push_back(d);
  }
  if (rc != SQLITE_DONE) return Error("cannot look up the trees holding an object");
  return out;
}

Result<std::optional<Index::StatEntry>> Index::FindStat(const std::string& path) {
  Use u(st_->find_stat);
  u.Blob(1, path.data(), path.size());
  const int rc = u.Step();
  if (rc == SQLITE_DONE) return std::optional<StatEntry>();
  if (rc != SQLITE_ROW) return Error("cannot read the stat cache");
  StatEntry e;
  e.path = path;
  e.dev = u.ColInt(0);
  e.ino = u.ColInt(1);
  e.size = u.ColInt(2);
  e.mtime_ns = u.ColInt(3);
  e.ctime_ns = u.ColInt(4);
  if (!u.ColId(5, &e.object)) return std::optional<StatEntry>();  // a damaged row vouches for nothing
  return std::optional<StatEntry>(std::move(e));
}

Status Index::ForEachStat(const std::string& prefix,
                          const std::function<void(StatEntry&, std::optional<uint64_t>)>& fn) {
  Query q(db_,
          "SELECT s.path, s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns, s.object, o.size FROM stat_cache s "
          "LEFT JOIN objects o ON o.id = s.object WHERE s.path >= ?1 AND s.path < ?2");
  if (!q.ok()) return Error("cannot read the stat cache");
  // Paths compare as bytes; every path below prefix sorts before prefix
  // with its last byte raised by one (a prefix ends in '/', raised '0').
  std::string end = prefix;
  if (!end.empty()) end.back() = static_cast<char>(end.back() + 1);
  else end = "\xff";
  q.use().Blob(1, prefix.data(), prefix.size()).Blob(2, end.data(), end.size());
  int rc;
  while ((rc = q.use().Step()) == SQLITE_ROW) {
    StatEntry e;
    e.path = q.use().ColBlob(0);
    e.dev = q.use().ColInt(1);
    e.ino = q.use().ColInt(2);
    e.size = q.use().ColInt(3);
    e.mtime_ns = q.use().ColInt(4);
    e.ctime_ns = q.use().ColInt(5);
    if (!q.use().ColId(6, &e.object)) continue;  // a damaged row vouches for nothing
    std::optional<uint64_t> size;
    if (!q.use().ColIsNull(7)) size = static_cast<uint64_t>(q.use().ColInt(7));
    fn(e, size);
  }
  if (rc != SQLITE_DONE) return Error("cannot read the stat cache");
  return Status::OK();
}

Status Index::PutStat(const StatEntry& e) {
  Use u(st_->put_stat);
  u.Blob(1, e.path.data(), e.path.size())
      .Int(2, e.dev)
      .Int(3, e.ino)
      .Int(4, e.size)
      .Int(5, e.mtime_ns)
      .Int(6, e.ctime_ns)
      .Id(7, e.object);
  if (u.Step() != SQLITE_DONE) return Error("cannot record the stat cache");
  return Status::OK();
}

}  // namespace chunkstore::internal

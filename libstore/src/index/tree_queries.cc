// SPDX-License-Identifier: Apache-2.0
// The index's queries about trees (which objects are trees, and what each
// names) and the stat cache of tree publishes. See index.h.
#include <algorithm>

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

Status Index::ScanStat(const std::string& prefix, StatScan* out) {
  // The rows first, then their objects' sizes in one walk in id order: a
  // join would descend the objects table's B-tree once per row, in path
  // order, which is random in id order and cost most of a republish.
  *out = StatScan();
  HugePageVector<char>& paths = out->paths_;
  HugePageVector<StatScan::Row>& rows = out->rows_;
  {
    Query q(db_,
            "SELECT path, dev, ino, size, mtime_ns, ctime_ns, object FROM stat_cache "
            "WHERE path >= ?1 AND path < ?2");
    if (!q.ok()) return Error("cannot read the stat cache");
    // Paths compare as bytes; every path below prefix sorts before prefix
    // with its last byte raised by one (a prefix ends in '/', raised '0').
    std::string end = prefix;
    if (!end.empty()) end.back() = static_cast<char>(end.back() + 1);
    else end = "\xff";
    Use& u = q.use();
    u.Blob(1, prefix.data(), prefix.size()).Blob(2, end.data(), end.size());
    int rc;
    while ((rc = u.Step()) == SQLITE_ROW) {
      StatScan::Row r;
      if (!u.ColId(6, &r.entry.object)) continue;  // a damaged row vouches for nothing
      const std::string_view path = u.ColBlobView(0);
      r.at = paths.size();
      r.len = path.size();
      paths.insert(paths.end(), path.begin(), path.end());
      r.entry.dev = u.ColInt(1);
      r.entry.ino = u.ColInt(2);
      r.entry.size = u.ColInt(3);
      r.entry.mtime_ns = u.ColInt(4);
      r.entry.ctime_ns = u.ColInt(5);
      rows.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) {
      *out = StatScan();
      return Error("cannot read the stat cache");
    }
  }
  // The primary key's order is the paths' byte order, which Find relies on;
  // sorted again only if a row came otherwise.
  auto by_path = [out](const StatScan::Row& a, const StatScan::Row& b) { return out->Path(a) < out->Path(b); };
  if (!std::is_sorted(rows.begin(), rows.end(), by_path)) std::sort(rows.begin(), rows.end(), by_path);
  std::vector<uint32_t> order(rows.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return rows[a].entry.object < rows[b].entry.object; });
  std::vector<Digest> ids;
  ids.reserve(order.size());
  for (uint32_t i : order) ids.push_back(rows[i].entry.object);
  std::vector<std::optional<uint64_t>> sizes;
  Status s = ObjectSizesInOrder(ids, &sizes);
  if (!s.ok()) {
    *out = StatScan();
    return s;
  }
  for (size_t k = 0; k < order.size(); ++k) rows[order[k]].object_size = sizes[k];
  return Status::OK();
}

const Index::StatEntry* Index::StatScan::Find(std::string_view path, std::optional<uint64_t>* object_size) const {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), path,
                             [this](const Row& r, std::string_view p) { return Path(r) < p; });
  if (it == rows_.end() || Path(*it) != path) return nullptr;
  *object_size = it->object_size;
  return &it->entry;
}

Status Index::ObjectSizesInOrder(const std::vector<Digest>& ids, std::vector<std::optional<uint64_t>>* sizes) {
  sizes->assign(ids.size(), std::nullopt);
  if (ids.empty()) return Status::OK();
  Query q(db_, "SELECT id, size FROM objects WHERE id >= ?1 ORDER BY id");
  if (!q.ok()) return Error("cannot read the objects");
  Use& u = q.use();
  // The cursor's row: the first whose id is at least the last one asked.
  bool have = false, at_end = false;
  Digest row;
  int64_t row_size = 0;
  auto next = [&]() -> Status {  // steps to the next row with a well-formed id
    for (;;) {
      const int rc = u.Step();
      if (rc == SQLITE_DONE) {
        have = false;
        at_end = true;
        return Status::OK();
      }
      if (rc != SQLITE_ROW) return Error("cannot read the objects");
      if (!u.ColId(0, &row)) continue;
      row_size = u.ColInt(1);
      have = true;
      return Status::OK();
    }
  };
  auto seek = [&](const Digest& id) -> Status {
    u.Reset();
    u.Id(1, id);
    at_end = false;
    return next();
  };
  // Rows between two wanted ids are stepped over while they are few (a
  // step costs a fraction of a descent) and sought past when they are not.
  constexpr int kStepsBeforeSeek = 8;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Digest& want = ids[i];
    if (at_end) break;  // every id from here on is past the last row
    if (!have) {
      CHUNKSTORE_RETURN_IF_ERROR(seek(want));
    } else if (row < want) {
      for (int step = 0; have && row < want && step < kStepsBeforeSeek; ++step) CHUNKSTORE_RETURN_IF_ERROR(next());
      if (have && row < want) CHUNKSTORE_RETURN_IF_ERROR(seek(want));
    }
    if (have && row == want) (*sizes)[i] = static_cast<uint64_t>(row_size);
  }
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

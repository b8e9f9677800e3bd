// SPDX-License-Identifier: Apache-2.0
// The order of a bucket's log records (bucket.h, RecordEffects): which
// records commute, so a cache that applied records out of key order knows
// when it must start again from the newest checkpoint.
//
// Records are written by machines that do not coordinate, so a cache can
// list a record after it applied a later one (its writer's PUT was still
// under way, or that writer's clock runs behind). Most changes commute:
// packs, chunks and objects are sets, and where a chunk lives is settled
// by the smallest pack name whatever the order. What does not commute is a
// name (its versions are numbered in the order they are applied) and a
// removal (a name or object removed before or after a change that uses
// it). A cache keeps each record's effects beside its key; a late record
// whose effects meet those of a record applied after it means the cache
// no longer holds the state of the log in key order, and is rebuilt.
#include <algorithm>
#include <set>

#include "bucket/bucket.h"

namespace chunkstore::internal {

namespace {

// The names in effects (which must start with 'n').
std::set<std::string> NamesOf(const std::string& effects) {
  std::set<std::string> names;
  size_t at = 1;
  while (at < effects.size()) {
    size_t end = effects.find('\n', at);
    if (end == std::string::npos) end = effects.size();
    names.insert(effects.substr(at, end - at));
    at = end + 1;
  }
  return names;
}

}  // namespace

std::string RecordEffects(const ChangeSet& c) {
  if (!c.removed_names.empty() || !c.removed_objects.empty() || !c.removed_chunks.empty() ||
      !c.removed_packs.empty() || c.kind == ChangeSet::kCheckpoint)
    return "r";
  if (c.names.empty()) return "";
  std::vector<std::string> names;
  for (const auto& n : c.names) names.push_back(n.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out = "n";
  for (const auto& n : names) out += n + "\n";
  return out;
}

bool EffectsCommute(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  // Not known (applied by a version that kept no effects): assume not.
  if (!a || !b) return false;
  if (a->empty() || b->empty()) return true;
  if ((*a)[0] != 'n' || (*b)[0] != 'n') return false;
  const std::set<std::string> x = NamesOf(*a), y = NamesOf(*b);
  for (const auto& n : x)
    if (y.count(n)) return false;
  return true;
}

}  // namespace chunkstore::internal

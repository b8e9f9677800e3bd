// SPDX-License-Identifier: Apache-2.0
// The order of a bucket's log records (bucket.h, RecordEffects): which
// records commute, so a cache that applied records out of key order knows
// when it must start again from the newest checkpoint.
//
// Records are written by machines that do not coordinate, so a cache can
// list a record after it applied a later one (its writer's PUT was still
// under way, or that writer's clock runs behind). Most changes commute:
// packs and chunks are sets, and where a chunk lives is settled by the
// smallest pack name whatever the order. What does not commute is a name
// (its versions are numbered in the order they are applied), an object
// two records add (its row is the first one's: time, pin) and a removal (a
// name or object removed before or after a change that uses it). A cache
// keeps each record's effects beside its key; a record applied after a
// later one whose effects meet its own means the cache no longer holds
// the state of the log in key order, and it is rebuilt.
#include <set>

#include "bucket/bucket.h"

namespace chunkstore::internal {

namespace {

// The lines of effects ("n:<name>", "o:<object hex>").
std::set<std::string> Tokens(const std::string& effects) {
  std::set<std::string> out;
  size_t at = 0;
  while (at < effects.size()) {
    size_t end = effects.find('\n', at);
    if (end == std::string::npos) end = effects.size();
    out.insert(effects.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace

std::string RecordEffects(const ChangeSet& c) {
  if (!c.removed_names.empty() || !c.removed_objects.empty() || !c.removed_chunks.empty() ||
      !c.removed_packs.empty() || c.kind == ChangeSet::kCheckpoint)
    return "r";
  // An object row is kept as the first record that adds it wrote it (its
  // time, its pin), so two records adding one object do not commute either.
  std::set<std::string> tokens;
  for (const auto& n : c.names) tokens.insert("n:" + n.name);
  for (const auto& o : c.objects) tokens.insert("o:" + o.id.Hex());
  std::string out;
  for (const auto& t : tokens) out += t + "\n";
  return out;
}

bool EffectsCommute(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  // Not known (applied by a version that kept no effects): assume not.
  if (!a || !b) return false;
  if (a->empty() || b->empty()) return true;
  if (*a == "r" || *b == "r") return false;
  const std::set<std::string> x = Tokens(*a), y = Tokens(*b);
  for (const auto& t : x)
    if (y.count(t)) return false;
  return true;
}

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// CompareSettled (settle.h).
#include "maintain/settle.h"

#include <map>

namespace chunkstore::internal {

Result<SettledComparison> CompareSettled(IndexHandle& index, ChangeLog& log, int attempts, size_t limit) {
  SettledComparison out;
  std::map<std::string, IndexDifference> persistent;  // by message
  for (int attempt = 1;; ++attempt) {
    Result<std::unique_ptr<Index>> truth = index.NewScratch();
    if (!truth.ok()) return truth.status();
    out.truth = std::move(*truth);
    Result<std::vector<ChangeLog::Problem>> problems = log.Check(out.truth.get());
    if (!problems.ok()) return problems.status();
    out.log_problems = std::move(*problems);
    out.log_damaged = false;
    for (const auto& p : out.log_problems) out.log_damaged = out.log_damaged || p.damage;
    // A damaged log gives no truth to compare with.
    if (out.log_damaged) return out;
    Result<std::vector<IndexDifference>> diffs = [&] {
      auto db = index.Lock();
      return CompareIndexes(*db, *out.truth, limit);
    }();
    if (!diffs.ok()) {
      out.walk_failed = diffs.status();
      return out;
    }
    std::map<std::string, IndexDifference> found;
    for (auto& d : *diffs)
      if (attempt == 1 || persistent.count(d.message)) found.emplace(d.message, std::move(d));
    persistent = std::move(found);
    if (persistent.empty() || attempt >= attempts) break;
    if (!log.CatchUp().ok()) break;  // a read-only store: what was found stands
  }
  for (auto& [message, d] : persistent) out.differences.push_back(std::move(d));
  return out;
}

}  // namespace chunkstore::internal

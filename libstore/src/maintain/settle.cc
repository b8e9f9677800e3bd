// SPDX-License-Identifier: Apache-2.0
// CompareSettled (settle.h).
#include "maintain/settle.h"

#include <map>

namespace chunkstore::internal {

Result<SettledComparison> CompareSettled(IndexHandle& index, ChangeLog& log, int attempts, size_t limit) {
  SettledComparison out;
  std::map<std::string, IndexDifference> persistent;  // by message
  std::vector<IndexDifference> last;                   // the last comparison's
  bool all_cut_off = limit > 0;
  // Replays that found a record gone and may be made again (see below).
  int replays_left = attempts - 1;
  for (int attempt = 1;; ++attempt) {
    Result<std::unique_ptr<Index>> truth = index.NewScratch();
    if (!truth.ok()) return truth.status();
    out.truth = std::move(*truth);
    Result<std::vector<ChangeLog::Problem>> problems = log.Check(out.truth.get());
    if (!problems.ok()) return problems.status();
    out.log_problems = std::move(*problems);
    out.log_damaged = out.log_stopped = false;
    for (const auto& p : out.log_problems) {
      out.log_damaged = out.log_damaged || p.damage;
      out.log_stopped = out.log_stopped || p.stopped;
    }
    // A replay lists the log, then reads what it listed. On a bucket,
    // another machine's newer checkpoints may delete listed records in
    // between (they cover them twice over): the replay finds them gone,
    // which is no damage, and the next replay starts from the newer
    // checkpoint. A record truly gone is found gone by every replay: what
    // the last one finds stands. Other damage (bytes that fail a check)
    // no race explains, and is not replayed for.
    bool gone = false;
    for (const auto& p : out.log_problems) gone = gone || (p.damage && (p.vanished || p.lost_change));
    if (gone && replays_left > 0) {
      --replays_left;
      --attempt;
      continue;
    }
    // A replay that stopped at damage gives no truth to compare with; one
    // that went around it (a bucket checkpoint passed over for the one
    // before) read the whole log.
    if (out.log_stopped) return out;
    Result<std::vector<IndexDifference>> diffs = [&] {
      auto db = index.Lock();
      return CompareIndexes(*db, *out.truth, limit);
    }();
    if (!diffs.ok()) {
      out.walk_failed = diffs.status();
      return out;
    }
    // A comparison cut off at the limit may list other differences each
    // time (the walk's order moves as writers go on): where every one was
    // cut off, far more differ than any race explains, and the last list
    // stands.
    all_cut_off = all_cut_off && diffs->size() >= limit;
    std::map<std::string, IndexDifference> found;
    for (auto& d : *diffs)
      if (attempt == 1 || persistent.count(d.message)) found.emplace(d.message, d);
    persistent = std::move(found);
    last = std::move(*diffs);
    if (persistent.empty() && !all_cut_off) break;
    if (attempt >= attempts) break;
    // A writer's change the index has not caught up with is what the next
    // comparison must not find; an index that cannot catch up is an error
    // of the check, not a difference.
    CHUNKSTORE_RETURN_IF_ERROR(log.CatchUp());
  }
  if (all_cut_off) {
    out.differences = std::move(last);
    return out;
  }
  for (auto& [message, d] : persistent) out.differences.push_back(std::move(d));
  return out;
}

}  // namespace chunkstore::internal

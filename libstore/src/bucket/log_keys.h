// SPDX-License-Identifier: Apache-2.0
// The keys of a bucket store's log and checkpoints (docs/format.md,
// "Bucket layout"): what they look like, and how they sort.
//
//   log/<epoch>-<ms>-<16 hex>        a change set
//   log/<epoch>-<ms>-checkpoint      the mark of the checkpoint below
//   checkpoints/<epoch>-<ms>         every change before its mark
//
// epoch is 10 digits, ms 13 (unix milliseconds by the writer's clock).
// A sequenced log (bucket format 4) puts a sequence number where ms is:
//
//   log/<epoch>-<seq>-change         change set number seq
//   log/<epoch>-<seq>-checkpoint     the mark of a checkpoint of change
//                                    sets up to seq ("change" sorts
//                                    before "checkpoint")
//   checkpoints/<epoch>-<seq>
//
// Every key read from a listing goes through these before it is used.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace chunkstore::internal {

inline constexpr const char* kLogPrefix = "log/";
inline constexpr const char* kCheckpointPrefix = "checkpoints/";
// Damaged log records a repair moved out of the log (Store::QuarantineLogRecord).
inline constexpr const char* kQuarantinePrefix = "quarantine/";
inline constexpr const char* kMarkSuffix = "-checkpoint";
inline constexpr const char* kSequencedSuffix = "-change";
// The meta key under which a cache records the newest checkpoint mark it
// applied (or started from).
inline constexpr const char* kCheckpointMeta = "bucket_checkpoint";
// The meta key under which a cache records the newest key applied when a
// checkpoint was last refused (a lost change).
inline constexpr const char* kCheckpointRefusedMeta = "bucket_checkpoint_refused";
// quarantine/<epoch>-<seq>-change + this: the record of a number found
// missing and filled by a repair (Store::QuarantineLogRecord).
inline constexpr const char* kMissingSuffix = ".missing";
inline constexpr size_t kLogTailSize = 10 + 1 + 13;  // "<epoch>-<ms>"
inline constexpr int64_t kLastSequence = 9999999999999;  // 13 digits
// The most numbers in a row MissingNumbers takes for a lag.
inline constexpr size_t kMostMissingNumbers = 4096;

inline bool AllDigits(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// "log/<epoch>-<ms>-..." -> (epoch, ms); false if the key has another shape.
inline bool ParseLogKey(const std::string& key, int64_t* epoch, int64_t* ms) {
  if (key.size() < 4 + kLogTailSize + 1 || key.compare(0, 4, kLogPrefix) != 0) return false;
  const std::string e = key.substr(4, 10), m = key.substr(15, 13);
  if (key[14] != '-' || key[28] != '-' || !AllDigits(e) || !AllDigits(m)) return false;
  *epoch = std::stoll(e);
  *ms = std::stoll(m);
  return true;
}

// "log/<epoch>-<ms>": sorts before every key of that millisecond.
inline std::string LogKeyPrefix(int64_t epoch, int64_t ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "log/%010lld-%013lld", static_cast<long long>(epoch),
                static_cast<long long>(ms < 0 ? 0 : ms));
  return buf;
}

// Whether key is a log record's key in a log of its kind (sequenced or
// not): a change set, or a checkpoint mark.
inline bool IsLogKey(const std::string& key, bool sequenced) {
  int64_t e = 0, ms = 0;
  if (!ParseLogKey(key, &e, &ms)) return false;
  const std::string rest = key.substr(4 + kLogTailSize + 1);
  if (rest == kMarkSuffix + 1) return true;
  if (sequenced) return rest == kSequencedSuffix + 1;
  return rest.size() == 16 && rest.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The key of change set seq in a sequenced log.
inline std::string SequencedKey(int64_t epoch, int64_t seq) { return LogKeyPrefix(epoch, seq) + kSequencedSuffix; }

inline bool IsCheckpointMark(const std::string& key) {
  return IsLogKey(key, false) && key.size() == 4 + kLogTailSize + std::char_traits<char>::length(kMarkSuffix);
}

// "checkpoints/<epoch>-<ms>" -> "<epoch>-<ms>"; "" if key has another shape.
inline std::string CheckpointTail(const std::string& key) {
  const size_t p = std::char_traits<char>::length(kCheckpointPrefix);
  if (key.size() != p + kLogTailSize || key.compare(0, p, kCheckpointPrefix) != 0) return {};
  int64_t e = 0, ms = 0;
  return ParseLogKey(std::string(kLogPrefix) + key.substr(p) + "-x", &e, &ms) ? key.substr(p) : std::string();
}

// A sequenced log's numbers form one run from the oldest record kept to
// the newest (docs/format.md, "Sequenced logs"), so a listing that skips a
// number lags behind the log (a service whose listings are eventually
// consistent), or the record is gone. Returns the change set keys missing
// from `listed` (keys after `after`, in order): those of every number
// after after's (1 for "", the log from its start) that sorts before a
// listed key of the same epoch, a checkpoint mark counting as preceded by
// its own number's change set. Keys of other epochs are left alone. Where
// more than kMostMissingNumbers numbers in a row are missing, *too_far
// gets the listed key after them (no lag skips so many) and the count
// stops there.
inline std::vector<std::string> MissingNumbers(const std::string& after, const std::vector<std::string>& listed,
                                               std::string* too_far) {
  std::vector<std::string> missing;
  too_far->clear();
  int64_t epoch = 1, next = 1;
  if (!after.empty()) {
    if (!ParseLogKey(after, &epoch, &next)) return missing;
    ++next;
  }
  for (const std::string& key : listed) {
    int64_t e = 0, seq = 0;
    if (!ParseLogKey(key, &e, &seq) || e != epoch) continue;
    const int64_t last_before = IsCheckpointMark(key) ? seq : seq - 1;
    if (last_before - next + 1 > static_cast<int64_t>(kMostMissingNumbers)) {
      *too_far = key;
      return missing;
    }
    for (; next <= last_before; ++next) missing.push_back(SequencedKey(epoch, next));
    next = std::max(next, seq + 1);
  }
  return missing;
}

inline std::string MarkKey(const std::string& tail) { return kLogPrefix + tail + kMarkSuffix; }
inline std::string CheckpointKey(const std::string& tail) { return kCheckpointPrefix + tail; }

}  // namespace chunkstore::internal

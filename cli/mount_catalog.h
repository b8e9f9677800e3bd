// SPDX-License-Identifier: Apache-2.0
// The catalog as `chunkstore mount` shows it: the latest version of every
// name that can be a path, read again at most once per refresh interval.
// Re-reading on demand rather than on a timer keeps an idle mount from
// touching the store (a bucket store's refresh costs requests).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "chunkstore/store.h"

namespace cli {

using NameList = std::vector<chunkstore::NameEntry>;  // sorted by name

class NameCatalog {
 public:
  NameCatalog(chunkstore::Store& store, double refresh_seconds, std::function<void(const std::string&)> log)
      : store_(store), refresh_seconds_(refresh_seconds), log_(std::move(log)) {}

  // Reads the names now (a bucket store refreshed first). Names that
  // cannot be paths are left out, each noted once on the log.
  chunkstore::Status Reload();
  // The names as last read; read again first when may_refresh and the
  // refresh interval has passed. A failed re-read is logged and the last
  // listing kept.
  std::shared_ptr<const NameList> Current(bool may_refresh);

  // Why a name cannot be a path ("" when it can): an empty, "." or ".."
  // component, one longer than NAME_MAX, or a first component that is
  // one of the mount's own directories.
  static std::string Unusable(const std::string& name);
  // The name exactly, or nullptr.
  static const chunkstore::NameEntry* Find(const NameList& names, const std::string& name);
  // Whether some name starts with prefix.
  static bool AnyBelow(const NameList& names, const std::string& prefix);
  // The first name at or after prefix in sort order.
  static NameList::const_iterator First(const NameList& names, const std::string& prefix);

 private:
  bool Stale();
  chunkstore::Status ReloadLocked();  // reload_mu_ held

  chunkstore::Store& store_;
  const double refresh_seconds_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;  // names_, loaded_at_
  std::shared_ptr<const NameList> names_ = std::make_shared<NameList>();
  std::chrono::steady_clock::time_point loaded_at_{};
  std::mutex reload_mu_;  // one re-read at a time; warned_
  std::set<std::string> warned_;
};

}  // namespace cli

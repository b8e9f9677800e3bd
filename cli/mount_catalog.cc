// SPDX-License-Identifier: Apache-2.0
// NameCatalog (mount_catalog.h): the names `chunkstore mount` shows, and
// the rule that keeps a name from becoming a path that escapes or
// shadows anything.
#include "mount_catalog.h"

#include <climits>

#include <algorithm>

#include "output.h"

namespace cli {

using chunkstore::NameEntry;
using chunkstore::Status;

std::string NameCatalog::Unusable(const std::string& name) {
  size_t start = 0;
  for (bool first = true;; first = false) {
    const size_t slash = name.find('/', start);
    const std::string part = name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty()) return "it has an empty path component";
    if (part == "." || part == "..") return "it has a '" + part + "' component";
    if (part.size() > NAME_MAX) return "a component is longer than " + std::to_string(NAME_MAX) + " bytes";
    if (first && (part == ".versions" || part == ".objects")) return "'" + part + "' is the mount's own directory";
    // NAME@N is a version's path in .versions/: a directory level spelled
    // so ('a@1' of 'a@1/x') would stand where version 1 of 'a' does.
    if (slash != std::string::npos) {
      const size_t at = part.rfind('@');
      if (at != std::string::npos && at + 1 < part.size() &&
          part.find_first_not_of("0123456789", at + 1) == std::string::npos)
        return "a directory level ends in '@' and digits, as a version in .versions/ does";
    }
    if (slash == std::string::npos) return "";
    start = slash + 1;
  }
}

NameList::const_iterator NameCatalog::First(const NameList& names, const std::string& prefix) {
  return std::lower_bound(names.begin(), names.end(), prefix,
                          [](const NameEntry& e, const std::string& k) { return e.name < k; });
}

const NameEntry* NameCatalog::Find(const NameList& names, const std::string& name) {
  auto it = First(names, name);
  return it != names.end() && it->name == name ? &*it : nullptr;
}

bool NameCatalog::AnyBelow(const NameList& names, const std::string& prefix) {
  auto it = First(names, prefix);
  return it != names.end() && it->name.compare(0, prefix.size(), prefix) == 0;
}

Status NameCatalog::Reload() {
  std::lock_guard<std::mutex> l(reload_mu_);
  return ReloadLocked();
}

bool NameCatalog::Stale() {
  std::lock_guard<std::mutex> l(mu_);
  return std::chrono::steady_clock::now() - loaded_at_ >= std::chrono::duration<double>(refresh_seconds_);
}

Status NameCatalog::ReloadLocked() {
  if (store_.is_bucket()) {
    Status s = store_.Refresh();
    if (!s.ok()) return s;
  }
  auto listed = store_.List();
  if (!listed.ok()) return listed.status();
  auto fresh = std::make_shared<NameList>();
  fresh->reserve(listed->size());
  for (NameEntry& e : *listed) {
    const std::string why = Unusable(e.name);
    if (why.empty()) fresh->push_back(std::move(e));
    else if (warned_.insert(e.name).second)
      log_("chunkstore: mount: name '" + Printable(e.name) + "' is not shown (" + why + ")");
  }
  std::lock_guard<std::mutex> n(mu_);
  names_ = std::move(fresh);
  loaded_at_ = std::chrono::steady_clock::now();
  return Status::OK();
}

std::shared_ptr<const NameList> NameCatalog::Current(bool may_refresh) {
  if (may_refresh && Stale()) {
    std::lock_guard<std::mutex> r(reload_mu_);
    // Threads that waited here while another re-read find it done.
    if (Stale()) {
      Status s = ReloadLocked();
      if (!s.ok()) {
        log_("chunkstore: mount: cannot re-read the names: " + Printable(s.message()));
        // Not again at once: a failing store would be asked on every lookup.
        std::lock_guard<std::mutex> l(mu_);
        loaded_at_ = std::chrono::steady_clock::now();
      }
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  return names_;
}

}  // namespace cli

// SPDX-License-Identifier: Apache-2.0
// Layout: the names of every file, directory and blob key a store writes,
// and the checks that a name read back from storage is one of them.
//
// A pack or log name read from the index, a change set or a listing is
// data, never a path to follow: it is used as a file name or key only
// after IsPackName (or IsLogSegmentName) accepts it, so a damaged or
// hostile row can never reach outside the store.
#pragma once

#include <cstdint>
#include <string>

namespace chunkstore::internal {

inline constexpr const char* kIndexFile = "index.db";
inline constexpr const char* kConfigFile = "config";
inline constexpr const char* kPacksDir = "packs";
inline constexpr const char* kLogDir = "log";
inline constexpr const char* kTmpDir = "tmp";
inline constexpr const char* kCreateLock = "LOCK";
inline constexpr const char* kGcLock = "GC.lock";
inline constexpr const char* kLogLock = "log/LOCK";

// "pack-<16 lowercase hex>.pack", exactly.
bool IsPackName(const std::string& name);
// A new pack's name, random so that writers never collide.
std::string NewPackName();
// The bucket key of a pack ("packs/<name>").
inline std::string PackKey(const std::string& name) { return std::string(kPacksDir) + "/" + name; }

}  // namespace chunkstore::internal

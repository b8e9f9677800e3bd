// SPDX-License-Identifier: Apache-2.0
// Version information for the library and what it was built against.
//
// Thread safety: all functions may be called from any thread.
#pragma once

#include <string>

namespace chunkstore {

// The library version, "MAJOR.MINOR.PATCH".
const char* Version();
// The newest index schema version this library reads and writes. It
// changes only when the on-disk format does (docs/format.md).
int SchemaVersion();
// One line naming the versions of SQLite, OpenSSL, zstd, libdeflate and xxHash in use.
std::string DependencyVersions();

}  // namespace chunkstore

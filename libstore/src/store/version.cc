// SPDX-License-Identifier: Apache-2.0
// Version strings for --version and applications.
#include "chunkstore/version.h"

#include <openssl/crypto.h>
#include <xxhash.h>
#include <libdeflate.h>
#include <zstd.h>

#include "index/index.h"

#ifndef CHUNKSTORE_VERSION
#error "CHUNKSTORE_VERSION must be defined by the build"
#endif

namespace chunkstore {

const char* Version() { return CHUNKSTORE_VERSION; }

int SchemaVersion() { return internal::kSchemaVersion; }

std::string DependencyVersions() {
  const unsigned xxh = XXH_versionNumber();
  return std::string("SQLite ") + internal::Index::LibraryVersion() + ", " + OpenSSL_version(OPENSSL_VERSION) +
         ", zstd " + ZSTD_versionString() + ", libdeflate " + LIBDEFLATE_VERSION_STRING + ", xxHash " + std::to_string(xxh / 10000) + "." +
         std::to_string(xxh / 100 % 100) + "." + std::to_string(xxh % 100);
}

}  // namespace chunkstore

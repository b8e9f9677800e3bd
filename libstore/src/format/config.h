// SPDX-License-Identifier: Apache-2.0
// The config of a store: what it was created with, written once as a few
// lines of text ("key value"), in STORE/config for a directory store and as
// the config blob of a bucket store. The index keeps a copy, but the config
// and the log are what a rebuilt index comes from.
#pragma once

#include <string>

#include "chunkstore/status.h"
#include "format/rows.h"

namespace chunkstore::internal {

struct StoreConfig {
  bool bucket = false;  // "chunkstore bucket store" rather than "chunkstore store"
  // Directory stores: 3 (the first with a config), 4 (may hold trees and
  // names with '@'). Bucket stores: 1 (log records without name
  // versions), 2 (change sets, which 1 cannot read), 3 (as directory 4),
  // 4 (as 3, with a sequenced log: created so where the service takes
  // conditional writes; versions before it would write with lock blobs
  // that its writers do not take).
  int format = 0;
  std::string id;  // 32 lowercase hex digits, random at creation
  StoreMeta meta;
  // Bucket stores of format 4: writers claim the log's next sequence
  // number with a conditional write instead of taking lock blobs ("log
  // sequenced"; docs/design.md, "Bucket stores").
  bool sequenced = false;
  // Bucket stores with a secret: HMAC-SHA256 of a fixed text under it, so
  // a wrong secret is told from a forged change.
  std::string secret_check;
};

// The newest formats this code reads and writes.
constexpr int kDirectoryFormat = 4;
constexpr int kBucketFormat = 4;
// The bucket format that may hold trees, which the first one raises a
// store of an older format to (a sequenced store is past it already).
constexpr int kBucketTreeFormat = 3;
constexpr int kBucketSequencedFormat = 4;
// What a new store is created as: the format before trees, which versions
// from before trees still read. The first change that needs the newest
// format (change_set.h, NeedsCurrentFormat) raises the store to it.
constexpr int kDirectoryCreateFormat = 3;
constexpr int kBucketCreateFormat = 2;

std::string EncodeConfig(const StoreConfig& c);
// where names the config in errors. Unsupported for a newer format;
// Corruption for a config that is damaged or incomplete.
Result<StoreConfig> DecodeConfig(const std::string& text, const std::string& where);

// What secret_check holds for a secret.
std::string SecretCheck(const std::string& secret);

}  // namespace chunkstore::internal

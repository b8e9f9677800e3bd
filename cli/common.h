// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the command implementations.
#pragma once

#include <memory>
#include <string>

#include "chunkstore/store.h"
#include "commands.h"
#include "output.h"

namespace cli {

// --store, else $CHUNKSTORE_DIR, else $XDG_DATA_HOME/chunkstore, else
// ~/.local/share/chunkstore.
std::string StoreDir(const Globals& g);

// Store-opening failures are failures (1), except a missing store (3), a
// damaged or missing index (4: `index rebuild` repairs it) and refused
// credentials (5).
int FailOpen(const chunkstore::Status& s);

// What a command does with its store. kRead opens a store it cannot write
// read-only; kWrite and kCreate refuse it with a message that says so;
// kCreate creates a missing store.
enum class Access { kRead, kWrite, kCreate };

// A bearer token from file (serve --token-file, copy --token-file): one
// line of at least 16 bytes, its line end dropped.
chunkstore::Result<std::string> ReadTokenFile(const std::string& file);

// Opens the store for access, rebuilding its index from the change log
// first when rebuild; prints what the open noticed to stderr.
chunkstore::Result<std::unique_ptr<chunkstore::Store>> OpenStore(const Globals& g, Access access,
                                                                 bool rebuild = false,
                                                                 bool refresh = true);

// The secret of a bucket store: --secret-file, else $CHUNKSTORE_SECRET_FILE
// ("" when neither is given). Never taken from the command line itself.
chunkstore::Result<std::string> StoreSecret(const Globals& g);

// Writes s to stdout and flushes.
void Print(const std::string& s);

}  // namespace cli

// Opens the store into `var` (a Store&), or returns the right exit code.
#define OPEN_OR_FAIL(var, access)                         \
  auto var##_r = ::cli::OpenStore(g, access);             \
  if (!var##_r.ok()) return ::cli::FailOpen(var##_r.status()); \
  chunkstore::Store& var = **var##_r

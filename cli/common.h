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

// Store-opening failures are failures (1), except a missing store (3) and
// a damaged index (4).
int FailOpen(const chunkstore::Status& s);

chunkstore::Result<std::unique_ptr<chunkstore::Store>> OpenStore(const Globals& g, bool create);

// Writes s to stdout and flushes.
void Print(const std::string& s);

}  // namespace cli

// Opens the store into `var` (a Store&), or returns the right exit code.
#define OPEN_OR_FAIL(var, create)                         \
  auto var##_r = ::cli::OpenStore(g, create);             \
  if (!var##_r.ok()) return ::cli::FailOpen(var##_r.status()); \
  chunkstore::Store& var = **var##_r

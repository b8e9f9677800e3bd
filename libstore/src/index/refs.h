// SPDX-License-Identifier: Apache-2.0
// Refs: how a user names an object (store.h, Store::Resolve), resolved
// against the index.
//
// "sha256:<64 hex>", a unique hex prefix of at least 8 digits (with or
// without "sha256:"), a name, NAME@N (the N-th version, 1 = first) or
// NAME@latest. An ambiguous prefix is InvalidArgument listing up to ten
// candidates; a bare hex string that matches no object is tried as a name.
#pragma once

#include <string>

#include "chunkstore/status.h"
#include "format/rows.h"
#include "index/index.h"

namespace chunkstore::internal {

// Resolves ref inside the caller's lock (and transaction, if any); with
// row_out, also loads the object's row (NotFound if it is gone).
Result<Digest> ResolveRef(Index& index, const std::string& ref, ObjectRow* row_out = nullptr);

// The object's row; NotFound if the index has none.
Result<ObjectRow> LoadObject(Index& index, const Digest& id);

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// Reading trees for the store's verbs: a tree object read whole and
// checked, and refs of the form REF:PATH (store.h, Store::Resolve).
#pragma once

#include <string>

#include "format/tree.h"
#include "store/store_impl.h"

namespace chunkstore::internal {

// The tree object id names, read in order (so its SHA-256 is proven to be
// id) and decoded. InvalidArgument if the index does not hold it as a
// tree; Corruption naming it if its content is not a canonical tree.
Result<TreeData> ReadTree(Store::Impl* impl, const Digest& id);

// ref itself, unless it is REF:PATH (not a ref in its own right, and REF
// names a tree): then "sha256:<hex>" of what sits at PATH. A symlink there
// is InvalidArgument (never followed); a path that is not there NotFound.
Result<std::string> ExpandRef(Store::Impl* impl, const std::string& ref);

// The tree ref names (REF:PATH included); InvalidArgument for an object
// that is not a tree.
Result<Digest> ResolveTree(Store::Impl* impl, const std::string& ref);

}  // namespace chunkstore::internal

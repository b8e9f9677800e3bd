// SPDX-License-Identifier: Apache-2.0
// An empty index in memory, for tests of the index's own rules and queries.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "index/index.h"

namespace chunkstore::testing {

// A new index with the default store's metadata; null (and a test
// failure) if it cannot be made.
inline std::unique_ptr<internal::Index> FreshIndex() {
  static internal::StoreMeta meta;
  internal::Index::OpenOptions o;
  o.create = &meta;
  auto index = internal::Index::Open(":memory:", o);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  return index.ok() ? std::move(*index) : nullptr;
}

}  // namespace chunkstore::testing

// SPDX-License-Identifier: Apache-2.0
// The process's read-ahead budget (read_ahead_budget.h).
#include "read/read_ahead_budget.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace chunkstore::internal {

namespace {

uint64_t DefaultBudget() {
  return std::max<uint64_t>(uint64_t{256} << 20, (uint64_t{32} << 20) * std::thread::hardware_concurrency());
}

std::atomic<uint64_t> held{0};
std::atomic<uint64_t> budget{DefaultBudget()};

}  // namespace

uint64_t ReadAheadBudget() { return budget.load(std::memory_order_relaxed); }

std::optional<ReadAheadShare> ReadAheadShare::Take(uint64_t n) {
  const uint64_t limit = budget.load(std::memory_order_relaxed);
  uint64_t now = held.load(std::memory_order_relaxed);
  do {
    if (n > limit || now > limit - n) return std::nullopt;
  } while (!held.compare_exchange_weak(now, now + n, std::memory_order_relaxed));
  return ReadAheadShare(n);
}

void ReadAheadShare::Release() {
  if (bytes_ == 0) return;
  held.fetch_sub(bytes_, std::memory_order_relaxed);
  bytes_ = 0;
}

uint64_t ReadAheadBytesHeld() { return held.load(std::memory_order_relaxed); }

void SetReadAheadBudgetForTesting(uint64_t bytes) {
  budget.store(bytes ? bytes : DefaultBudget(), std::memory_order_relaxed);
}

}  // namespace chunkstore::internal

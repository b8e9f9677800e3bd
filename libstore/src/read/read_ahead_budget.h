// SPDX-License-Identifier: Apache-2.0
// The read-ahead budget: how many bytes of chunks all the readers of a
// process together may hold verified ahead of what they were asked for.
//
// A reader keeps several chunks ahead of its cursor (ChunkLoader::
// read_ahead_depth), and keeps them while it is open, read or not. A
// process that holds many readers open (a mount's open files, a program
// that opens many objects and reads a little of each) would otherwise hold
// that many times over: several chunks for each reader, even after a read
// of one byte. Past the budget a reader reads only what it is asked for, on the
// caller's thread, until other readers hand out or drop what they hold.
//
// Thread safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

namespace chunkstore::internal {

// Bytes that readers may hold read ahead at once, counted as the memory a
// buffer made for each chunk holds (BufferPool::CapacityFor): 256 MiB, or
// 32 MiB per hardware thread where that is more (a reader keeps about 4
// chunks per worker ahead, and a pooled buffer may be larger than its
// chunk). Past it a reader still holds the chunk it reads from and, in a
// whole read, the next one (whose first bytes prove the link between
// them). One reader takes at most half of it, beyond its first chunk, so
// that one read on a machine with many cores leaves the others some.
uint64_t ReadAheadBudget();

// A share of the budget for one chunk read ahead, given back when the
// share is destroyed (the chunk handed out, or dropped).
class ReadAheadShare {
 public:
  ReadAheadShare() = default;
  ReadAheadShare(ReadAheadShare&& o) noexcept : bytes_(std::exchange(o.bytes_, 0)) {}
  ReadAheadShare& operator=(ReadAheadShare&& o) noexcept {
    if (this != &o) {
      Release();
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ReadAheadShare(const ReadAheadShare&) = delete;
  ReadAheadShare& operator=(const ReadAheadShare&) = delete;
  ~ReadAheadShare() { Release(); }

  // A share of n bytes, or none where the budget has not that much left.
  static std::optional<ReadAheadShare> Take(uint64_t n);
  uint64_t bytes() const { return bytes_; }

 private:
  explicit ReadAheadShare(uint64_t n) : bytes_(n) {}
  void Release();
  uint64_t bytes_ = 0;
};

// Bytes the process's readers hold read ahead now.
uint64_t ReadAheadBytesHeld();

// Sets the budget (tests only); 0 restores the default.
void SetReadAheadBudgetForTesting(uint64_t bytes);

}  // namespace chunkstore::internal

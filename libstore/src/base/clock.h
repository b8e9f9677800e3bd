// SPDX-License-Identifier: Apache-2.0
// Wall-clock time as the store records it: whole seconds for objects,
// names and changes, milliseconds for bucket log keys; and a steady clock
// for durations.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace chunkstore::internal {

inline int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Milliseconds on a clock that only moves forward and, unlike
// steady_clock, goes on while the machine is suspended: for how long ago
// something happened in this process.
inline int64_t SteadyMs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace chunkstore::internal

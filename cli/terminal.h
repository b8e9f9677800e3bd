// SPDX-License-Identifier: Apache-2.0
// What long commands share with the terminal: a one-line progress bar on
// stderr, and Ctrl-C (SIGINT, SIGTERM, SIGHUP) turned into a flag the
// command stops at, so it can clean up and say what it left behind.
#pragma once

#include <signal.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace cli {

// A one-line progress bar on stderr: bytes done (of total, when known),
// the rate, an ETA, and what else the command counts (a suffix such as
// "1,204 files"). Redrawn at most ten times a second; cleared when
// destroyed, so a message printed after it gets a line of its own.
class Progress {
 public:
  explicit Progress(uint64_t total) : total_(total), start_(Clock::now()) {}
  ~Progress();
  void Update(uint64_t done, const std::string& suffix = {});

 private:
  using Clock = std::chrono::steady_clock;
  uint64_t total_;
  Clock::time_point start_, last_{};
  bool shown_ = false;
};

// Whether stderr is a terminal the command may draw progress on (never
// with --quiet).
bool ShowProgress(bool quiet);

// Set by the first SIGINT, SIGTERM or SIGHUP while an InterruptGuard is
// alive; a second signal ends the process at once.
extern std::atomic<bool> g_interrupted;

// Installs the handler for its lifetime; without SA_RESTART, so a read of
// stdin waiting for input returns EINTR.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

}  // namespace cli

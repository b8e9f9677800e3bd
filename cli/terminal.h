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
#include <memory>
#include <string>

namespace cli {

// How a command shows its progress (--progress): a line redrawn on a
// terminal's stderr (auto, and only on a terminal, never with --quiet),
// JSON lines on stderr for programs (json, whatever stderr is), or none.
enum class ProgressMode { kNone, kTerminal, kJson };
// The mode for this run: --progress, the terminal and --quiet decide.
ProgressMode WantProgress(const std::string& flag, bool quiet);

// Progress on stderr: bytes done (of total, when known), the rate, an ETA,
// and a count of what else the command does (entries, objects). On a
// terminal one line, redrawn at most ten times a second and cleared when
// destroyed, so a message printed after it gets a line of its own. As
// JSON, a line at most every half second,
// {"progress": {"command", "bytes", "total"?, "count"?, "seconds"}}, and a
// last one with "done": true from Done().
class Progress {
 public:
  Progress(uint64_t total, ProgressMode mode = ProgressMode::kTerminal, std::string command = {},
           std::string count_name = {})
      : total_(total), mode_(mode), command_(std::move(command)), count_name_(std::move(count_name)),
        start_(Clock::now()) {}
  ~Progress();
  void Update(uint64_t done, uint64_t count = 0);
  // The total, once it is known.
  void SetTotal(uint64_t total) { total_ = total; }
  // The work is finished (JSON: the final line).
  void Done(uint64_t done, uint64_t count = 0);

 private:
  using Clock = std::chrono::steady_clock;
  void Json(uint64_t done, uint64_t count, bool finished);
  uint64_t total_;
  ProgressMode mode_;
  std::string command_, count_name_;
  Clock::time_point start_, last_{};
  bool shown_ = false;
};

// The Progress a command runs with, or none: in terminal mode only for
// work of more than min_total bytes (or whose total is not known, 0).
std::unique_ptr<Progress> MakeProgress(ProgressMode mode, uint64_t total, uint64_t min_total, const std::string& command,
                                       const std::string& count_name = {});

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

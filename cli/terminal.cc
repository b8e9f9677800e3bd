// SPDX-License-Identifier: Apache-2.0
// Progress lines and interrupts (terminal.h).
#include "terminal.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

#include "output.h"

namespace cli {

Progress::~Progress() {
  if (shown_) std::fprintf(stderr, "\r%78s\r", "");
}

void Progress::Update(uint64_t done, const std::string& suffix) {
  const auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  std::string line(1, '\r');
  if (total_) {
    const int width = 24;
    const int fill = static_cast<int>(std::min<uint64_t>(done, total_) * width / total_);
    line.append(1, '[').append(fill, '#').append(width - fill, '.').append("] ");
    line.append(HumanSize(done)).append(" / ").append(HumanSize(total_));
  } else {
    line.append(HumanSize(done));
  }
  line += "  " + HumanSize(static_cast<uint64_t>(rate)) + "/s";
  if (total_ && rate > 0 && done < total_)
    line += "  ETA " + std::to_string(static_cast<int>((total_ - done) / rate) + 1) + "s";
  if (!suffix.empty()) line += "  " + suffix;
  std::fprintf(stderr, "%-78s", line.c_str());
  shown_ = true;
}

bool ShowProgress(bool quiet) { return !quiet && ::isatty(STDERR_FILENO); }

std::atomic<bool> g_interrupted{false};

namespace {
extern "C" void OnInterrupt(int sig) {
  if (g_interrupted.exchange(true)) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}
}  // namespace

InterruptGuard::InterruptGuard() {
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
}

InterruptGuard::~InterruptGuard() {
  for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
}

}  // namespace cli

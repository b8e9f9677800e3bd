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

void Progress::Json(uint64_t done, uint64_t count, bool finished) {
  cli::Json j;
  j.BeginObject().Key("progress").BeginObject().Key("command").Str(command_).Key("bytes").Num(done);
  if (total_) j.Key("total").Num(total_);
  if (!count_name_.empty()) j.Key(count_name_).Num(count);
  j.Key("seconds").Real(std::chrono::duration<double>(Clock::now() - start_).count());
  if (finished) j.Key("done").Bool(true);
  j.EndObject().EndObject();
  const std::string line = j.str() + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::Update(uint64_t done, uint64_t count) {
  const auto now = Clock::now();
  if (now - last_ < std::chrono::milliseconds(mode_ == ProgressMode::kJson ? 500 : 100)) return;
  last_ = now;
  if (mode_ == ProgressMode::kJson) {
    Json(done, count, false);
    return;
  }
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
  if (!count_name_.empty()) line += "  " + std::to_string(count) + " " + count_name_;
  std::fprintf(stderr, "%-78s", line.c_str());
  shown_ = true;
}

void Progress::Done(uint64_t done, uint64_t count) {
  if (mode_ == ProgressMode::kJson) Json(done, count, true);
}

ProgressMode WantProgress(const std::string& flag, bool quiet) {
  if (flag == "json") return ProgressMode::kJson;
  if (flag == "none" || quiet || !::isatty(STDERR_FILENO)) return ProgressMode::kNone;
  return ProgressMode::kTerminal;
}

std::unique_ptr<Progress> MakeProgress(ProgressMode mode, uint64_t total, uint64_t min_total, const std::string& command,
                                       const std::string& count_name) {
  if (mode == ProgressMode::kNone) return nullptr;
  if (mode == ProgressMode::kTerminal && total != 0 && total <= min_total) return nullptr;
  return std::make_unique<Progress>(total, mode, command, count_name);
}

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

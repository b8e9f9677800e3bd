// SPDX-License-Identifier: Apache-2.0
// The benchmark harness: runs an operation's warmups and timed samples,
// keeps every sample, and writes the report (text and JSON).
#pragma once

#include <chrono>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace bench {

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// CPU time spent between Start and Stop calls, summed over every interval:
// by the whole machine (all cores, every process and kernel thread, from
// /proc/stat: whole clock ticks, usually 10 ms, so only sums over many
// intervals mean much) and by this process's own threads (getrusage).
// Where the kernel's work for an operation runs outside the process (page
// write-back, I/O completion), machine minus own is that work; it includes
// whatever else ran meanwhile.
class CpuMeter {
 public:
  void Start();
  void Stop();
  int intervals() const { return intervals_; }
  double machine_ms() const { return machine_ms_; }
  double own_ms() const { return own_ms_; }

 private:
  double machine0_ = 0, own0_ = 0;
  double machine_ms_ = 0, own_ms_ = 0;
  int intervals_ = 0;
};

enum class Unit { kMiBps, kObjectsPerSecond, kNone };

struct Result {
  std::string name;
  std::string inside;  // what the timed region contains
  std::vector<double> samples_ms;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  Unit unit = Unit::kNone;
  double work = 0;  // bytes (kMiBps) or objects per sample
  double rate = 0;  // at the median
  // Extra fields, already JSON-encoded values.
  std::vector<std::pair<std::string, std::string>> extra;
};

struct Config {
  int warmups = 5;
  int samples = 7;
  std::string only;  // regex on operation names; empty = all
};

double Median(std::vector<double> v);
double Percentile(std::vector<double> v, double p);

class Harness {
 public:
  explicit Harness(Config c) : config_(std::move(c)) {}

  bool Wanted(const std::string& name) const;
  // Runs sample() warmups + samples times; each call returns the elapsed
  // milliseconds of its own timed region (setup it does is not counted).
  Result& Measure(const std::string& name, const std::string& inside, Unit unit, double work,
                  const std::function<double()>& sample);
  // Records a result measured some other way (e.g. in child processes).
  Result& Add(Result r);

  const std::vector<Result>& results() const { return results_; }
  const Config& config() const { return config_; }

 private:
  Config config_;
  std::vector<Result> results_;
};

void Finish(Result& r);
std::string FormatRow(const Result& r);
std::string ToJson(const std::vector<Result>& results, const std::string& environment_json);
std::string JsonString(const std::string& s);
std::string JsonNumber(double v);

}  // namespace bench

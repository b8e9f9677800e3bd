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

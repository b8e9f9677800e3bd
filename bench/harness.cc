// SPDX-License-Identifier: Apache-2.0
// Harness implementation: statistics, text rows and JSON output.
#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include <sys/resource.h>
#include <unistd.h>

namespace bench {

namespace {

// Busy time of all cores so far: user, nice, system, irq and softirq
// ticks of /proc/stat's "cpu" line (idle, iowait and steal are not work
// done here); 0 where it cannot be read.
double MachineBusyMs() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind("cpu ", 0) != 0) return 0;
  std::istringstream fields(line.substr(4));
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq;
  return (user + nice + system + irq + softirq) * 1000.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double OwnCpuMs() {
  struct rusage u;
  ::getrusage(RUSAGE_SELF, &u);
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_usec) / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

}  // namespace

void CpuMeter::Start() {
  machine0_ = MachineBusyMs();
  own0_ = OwnCpuMs();
}

void CpuMeter::Stop() {
  machine_ms_ += MachineBusyMs() - machine0_;
  own_ms_ += OwnCpuMs() - own0_;
  ++intervals_;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

bool Harness::Wanted(const std::string& name) const {
  return config_.only.empty() || std::regex_search(name, std::regex(config_.only));
}

void Finish(Result& r) {
  r.median_ms = Median(r.samples_ms);
  r.min_ms = r.samples_ms.empty() ? 0 : *std::min_element(r.samples_ms.begin(), r.samples_ms.end());
  r.max_ms = r.samples_ms.empty() ? 0 : *std::max_element(r.samples_ms.begin(), r.samples_ms.end());
  if (r.median_ms > 0) {
    if (r.unit == Unit::kMiBps) r.rate = r.work / (1024.0 * 1024.0) / (r.median_ms / 1000.0);
    if (r.unit == Unit::kObjectsPerSecond) r.rate = r.work / (r.median_ms / 1000.0);
  }
}

Result& Harness::Measure(const std::string& name, const std::string& inside, Unit unit, double work,
                         const std::function<double()>& sample) {
  Result r;
  r.name = name;
  r.inside = inside;
  r.unit = unit;
  r.work = work;
  for (int i = 0; i < config_.warmups; ++i) sample();
  for (int i = 0; i < config_.samples; ++i) r.samples_ms.push_back(sample());
  return Add(std::move(r));
}

Result& Harness::Add(Result r) {
  Finish(r);
  std::cout << FormatRow(r) << std::endl;
  results_.push_back(std::move(r));
  return results_.back();
}

std::string FormatRow(const Result& r) {
  char buf[256];
  std::string rate;
  if (r.unit == Unit::kMiBps) rate = JsonNumber(r.rate) + " MiB/s";
  if (r.unit == Unit::kObjectsPerSecond) rate = JsonNumber(r.rate) + " objects/s";
  std::snprintf(buf, sizeof buf, "%-28s median %10.3f ms  (%.3f-%.3f)  %s", r.name.c_str(),
                r.median_ms, r.min_ms, r.max_ms, rate.c_str());
  std::string out = buf;
  for (const auto& [k, v] : r.extra) out += "  " + k + "=" + v;
  return out;
}

std::string JsonString(const std::string& s) {
  return nlohmann::ordered_json(s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string JsonNumber(double v) {
  // Four decimals are more than any timing here resolves; tiny values
  // (rates of errors, fractions) keep six significant digits.
  if (!std::isfinite(v)) return "null";
  double shown = std::round(v * 1e4) / 1e4;
  if (v != 0 && std::fabs(v) < 0.001) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    shown = std::strtod(buf, nullptr);
  }
  return nlohmann::ordered_json(shown).dump();
}

std::string ToJson(const std::vector<Result>& results, const std::string& environment_json) {
  using Json = nlohmann::ordered_json;
  // One result a line, so that reports diff well.
  std::string out = "{\n  \"environment\": " + Json::parse(environment_json).dump() + ",\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    Json j;
    j["name"] = r.name;
    j["inside"] = r.inside;
    j["samples_ms"] = Json::array();
    for (double ms : r.samples_ms) j["samples_ms"].push_back(Json::parse(JsonNumber(ms)));
    j["median_ms"] = Json::parse(JsonNumber(r.median_ms));
    j["min_ms"] = Json::parse(JsonNumber(r.min_ms));
    j["max_ms"] = Json::parse(JsonNumber(r.max_ms));
    if (r.unit == Unit::kMiBps) j["mib_per_s"] = Json::parse(JsonNumber(r.rate));
    if (r.unit == Unit::kObjectsPerSecond) j["objects_per_s"] = Json::parse(JsonNumber(r.rate));
    for (const auto& [k, v] : r.extra) j[k] = Json::parse(v);
    out += "    " + j.dump(-1, ' ', false, Json::error_handler_t::replace) + (i + 1 < results.size() ? ",\n" : "\n");
  }
  return out + "  ]\n}\n";
}

}  // namespace bench

// SPDX-License-Identifier: Apache-2.0
// chunkstore-bench: macro benchmarks of the real library in one process,
// with medians, ranges and a JSON report (see docs/performance.md).
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "chunkstore/version.h"
#include "harness.h"
#include "workloads.h"

namespace fs = std::filesystem;

namespace {

std::string ReadCommand(const std::string& cmd) {
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

std::string Environment(const bench::Workload& w, const bench::Config& c) {
  struct utsname u {};
  ::uname(&u);
  char date[64];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const std::string commit = ReadCommand("git -C " CHUNKSTORE_SOURCE_DIR " rev-parse --short HEAD 2>/dev/null");
  const std::string dirty =
      ReadCommand("git -C " CHUNKSTORE_SOURCE_DIR
                  " status --porcelain --untracked-files=no -- . ':!docs/measurements' 2>/dev/null");
  nlohmann::ordered_json e;
  e["cpu"] = CpuModel();
  e["cores"] = std::thread::hardware_concurrency();
  e["kernel"] = std::string(u.sysname) + " " + u.release;
  e["compiler"] = "g++ " __VERSION__;
  e["build_type"] = CHUNKSTORE_BUILD_TYPE;
  e["flags"] = CHUNKSTORE_CXX_FLAGS;
  e["git_commit"] = commit + (dirty.empty() ? "" : "+dirty");
  e["chunkstore"] = chunkstore::Version();
  e["libraries"] = chunkstore::DependencyVersions();
  e["date"] = date;
  e["size_bytes"] = w.size;
  e["seed"] = w.seed;
  e["warmups"] = c.warmups;
  e["samples"] = c.samples;
  e["scratch_dir"] = w.dir;
  return e.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool ParseSize(const std::string& text, uint64_t* out) {
  size_t pos = 0;
  double v;
  try {
    v = std::stod(text, &pos);
  } catch (...) {
    return false;
  }
  std::string unit = text.substr(pos);
  double mult = 1;
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K") mult = 1024;
  else if (unit == "MiB" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else return false;
  if (v < 0) return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

// Prints each operation's change against an earlier report, flagging
// changes larger than the two runs' combined spread.
int Compare(const std::string& old_path, const std::vector<bench::Result>& now) {
  std::ifstream f(old_path);
  if (!f) {
    std::cerr << "chunkstore-bench: cannot read " << old_path << "\n";
    return 1;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json old;
  try {
    old = nlohmann::json::parse(ss.str());
    if (!old["results"].is_array()) throw std::runtime_error("it has no results");
  } catch (const std::exception& e) {
    std::cerr << "chunkstore-bench: " << old_path << " is not a report: " << e.what() << "\n";
    return 1;
  }
  std::cout << "\ncompared with " << old_path << ":\n";
  for (const auto& r : now) {
    for (const auto& o : old["results"]) {
      if (o.value("name", "") != r.name) continue;
      const double before = o.value("median_ms", 0.0);
      const double spread = (r.max_ms - r.min_ms) + (o.value("max_ms", 0.0) - o.value("min_ms", 0.0));
      const double change = r.median_ms - before;
      char line[200];
      std::snprintf(line, sizeof line, "  %-28s %10.3f -> %10.3f ms  (%+.1f%%)%s", r.name.c_str(), before,
                    r.median_ms, before > 0 ? 100.0 * change / before : 0.0,
                    std::abs(change) > spread ? (change > 0 ? "  SLOWER beyond spread" : "  FASTER beyond spread")
                                              : "");
      std::cout << line << "\n";
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if ((argc == 5 || argc == 6) && std::string(argv[1]) == "--memory-child")
    return bench::MemoryChild(argv[2], std::stoull(argv[3]), std::stoull(argv[4]), argc == 6 ? argv[5] : "");

  CLI::App app{"chunkstore-bench: medians of prepare, publish, dedupe and read on this machine"};
  bench::Config config;
  bench::Workload w;
  std::string size_text = "32MiB", json_path, compare_path, memory_text;
  app.add_option("--size", size_text, "Payload size (default 32MiB; B, KiB, MiB, GiB)");
  app.add_option("--seed", w.seed, "Seed of the pseudo-random payload (default 1)");
  app.add_option("--warmups", config.warmups, "Untimed runs before sampling (default 5)");
  app.add_option("--samples", config.samples, "Timed samples per operation (default 7)");
  app.add_option("--dir", w.dir, "Scratch directory (default: a new one under /tmp)");
  app.add_option("--only", config.only, "Run only operations whose name matches REGEX");
  app.add_option("--json", json_path, "Write the report as JSON to FILE");
  app.add_option("--compare", compare_path, "Compare with an earlier JSON report");
  app.add_option("--rebuild-objects", w.rebuild_objects, "Objects in the index-rebuild store (default 100000)");
  app.add_option("--codec-input", w.codec_input,
                 "A real file to run the codec-* operations on (each codec and level of --codecs)");
  app.add_option("--codecs", w.codecs, "Codecs and levels for codec-* (default zlib:1 zlib:6 zstd:1 zstd:3 zstd:6 zstd:12)");
  app.add_option("--bootstrap-records", w.bootstrap_records,
                 "Log records of history in the s3-bootstrap-N stores (default 1000 100000)");
  app.add_option("--s3", w.s3_url, "Also measure a bucket store under this s3://BUCKET/PREFIX");
  app.add_option("--memory-sizes", memory_text, "Payload sizes for the memory runs (default 256,256MiB,1GiB)");
  CLI11_PARSE(app, argc, argv);
  if (!ParseSize(size_text, &w.size) || w.size < (1 << 20)) {
    std::cerr << "chunkstore-bench: --size must be at least 1MiB, not " << size_text << "\n";
    return 2;
  }
  if (!memory_text.empty()) {
    w.memory_sizes.clear();
    std::stringstream ss(memory_text);
    for (std::string part; std::getline(ss, part, ',');) {
      uint64_t v;
      if (!ParseSize(part, &v)) {
        std::cerr << "chunkstore-bench: bad --memory-sizes entry " << part << "\n";
        return 2;
      }
      w.memory_sizes.push_back(v);
    }
  }
  if (config.samples < 1 || config.warmups < 0) {
    std::cerr << "chunkstore-bench: need --samples >= 1 and --warmups >= 0\n";
    return 2;
  }
  const bool own_dir = w.dir.empty();
  if (own_dir) {
    char templ[] = "/tmp/chunkstore-bench-XXXXXX";
    if (!::mkdtemp(templ)) return 1;
    w.dir = templ;
  }
  fs::create_directories(w.dir);
  w.self = fs::read_symlink("/proc/self/exe").string();
  w.payload = bench::RandomPayload(w.size, w.seed);
  w.payload_path = w.dir + "/payload.bin";
  std::ofstream(w.payload_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(w.payload.data()), static_cast<std::streamsize>(w.size));

  bench::Harness h(config);
  std::cout << "chunkstore-bench: " << w.size << " bytes, seed " << w.seed << ", " << config.warmups
            << " warmups, " << config.samples << " samples\n";
  bench::RunFileAndHashControls(h, w);
  bench::RunPrepare(h, w);
  bench::RunPublish(h, w);
  bench::RunRead(h, w);
  bench::RunSmallObjects(h, w);
  bench::RunConcurrentRead(h, w);
  bench::RunCatalog(h, w);
  bench::RunMemory(h, w);
  bench::RunRebuild(h, w);
  bench::RunCodecs(h, w);
  bench::RunS3(h, w);

  const std::string report = bench::ToJson(h.results(), Environment(w, config));
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << report;
    if (!out) {
      std::cerr << "chunkstore-bench: cannot write " << json_path << "\n";
      return 1;
    }
  }
  if (own_dir) fs::remove_all(w.dir);
  if (!compare_path.empty()) return Compare(compare_path, h.results());
  return 0;
}

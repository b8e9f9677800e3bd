// SPDX-License-Identifier: Apache-2.0
// The concurrency campaign: 8 reader processes, 2 writer processes and one
// gc process share a store for a bounded time. Writers publish payloads and
// register them (and sometimes remove older names of their own); readers
// read random registered objects whole or by range and compare every byte.
// At the end every registered, unremoved object must read back exactly.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common.h"
#include "payload.h"

namespace campaign {

namespace fs = std::filesystem;
using chunkstore::Status;
using chunkstore::Store;

namespace {

struct Entry {
  std::string id, name;
  uint64_t seed;
  size_t size;
};

std::vector<Entry> Registry(const std::string& dir, std::set<std::string>* removed) {
  std::vector<Entry> out;
  for (const auto& line : ReadLines(dir + "/registry")) {
    if (line.size() < 3 || line[1] != ' ') Die("malformed registry line: " + line);
    std::istringstream in(line.substr(2));
    if (line[0] == 'P') {
      Entry e;
      in >> e.id >> e.name >> e.seed >> e.size;
      out.push_back(e);
    } else if (line[0] == 'R' && removed) {
      std::string name;
      in >> name;
      removed->insert(name);
    }
  }
  return out;
}

}  // namespace

int ConcurrencyChild(const std::string& role, const std::string& dir, int k, double seconds) {
  chunkstore::Options o = CampaignOptions();
  o.create_if_missing = false;
  auto opened = Store::Open(dir + "/store", o);
  if (!opened.ok()) Die(role + ": cannot open: " + opened.status().ToString());
  Store& store = **opened;
  std::mt19937_64 rng(k * 7919 + 1);
  Counters c;
  double ops = 0, errors = 0, busy = 0, wrong = 0, removed_during_read = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  uint64_t next = 1000000ull * (k + 1);
  std::vector<std::string> mine;
  while (std::chrono::steady_clock::now() < until) {
    if (role == "writer") {
      if (mine.size() > 6 && rng() % 4 == 0) {
        const std::string name = mine.front();
        JournalAppend(dir + "/registry", "R " + name);
        Status s = store.RemoveName(name);
        if (s.IsBusy()) ++busy;
        else if (!s.ok()) ++errors;
        mine.erase(mine.begin());
      } else {
        const uint64_t seed = next++;
        const size_t size = 1000 + rng() % (1u << 20);
        const auto data = Payload(seed, size);
        const std::string name = "w" + std::to_string(k) + "/" + std::to_string(seed);
        auto r = store.PublishBytes(data.data(), data.size(), name);
        if (!r.ok()) {
          r.status().IsBusy() ? ++busy : ++errors;
          if (!r.status().IsBusy()) std::cerr << role << ": " << r.status().ToString() << "\n";
        } else {
          JournalAppend(dir + "/registry", "P " + r->id + " " + name + " " + std::to_string(seed) + " " +
                                               std::to_string(size));
          mine.push_back(name);
        }
      }
      ++ops;
    } else if (role == "gc") {
      chunkstore::GcOptions g;
      g.orphan_grace_seconds = 0;
      g.compact_below = 0.9;  // rewrite eagerly: the hardest case for readers
      auto r = store.Gc(g);
      if (!r.ok()) {
        r.status().IsBusy() ? ++busy : ++errors;
        if (!r.status().IsBusy()) std::cerr << "gc: " << r.status().ToString() << "\n";
      }
      ++ops;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else {  // reader
      std::set<std::string> removed;
      const auto reg = Registry(dir, &removed);
      if (reg.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      const Entry& e = reg[rng() % reg.size()];
      const auto expect = Payload(e.seed, e.size);
      auto reader = store.OpenReader(e.id);
      ++ops;
      if (!reader.ok()) {
        // Removed by its writer and collected: not an error.
        if (reader.status().IsNotFound()) ++removed_during_read;
        else if (reader.status().IsBusy()) ++busy;
        else {
          ++errors;
          std::cerr << "reader: " << reader.status().ToString() << "\n";
        }
        continue;
      }
      const uint64_t off = rng() % e.size;
      const size_t len = rng() % 2 ? e.size - off : std::min<size_t>(e.size - off, 1 + rng() % 100000);
      std::vector<uint8_t> buf(len);
      size_t got = 0;
      Status failed;
      while (got < len) {
        auto n = (*reader)->ReadAt(off + got, buf.data() + got, len - got);
        if (!n.ok()) {
          failed = n.status();
          break;
        }
        if (*n == 0) break;
        got += *n;
      }
      if (!failed.ok()) {
        if (failed.IsNotFound()) ++removed_during_read;
        else if (failed.IsBusy()) ++busy;
        else {
          ++errors;
          std::cerr << "reader: " << failed.ToString() << "\n";
        }
        continue;
      }
      if (got != len || std::memcmp(buf.data(), expect.data() + off, len) != 0) ++wrong;
    }
  }
  c.Set("ops", ops);
  c.Set("errors", errors);
  c.Set("busy", busy);
  c.Set("wrong_bytes", wrong);
  c.Set("removed_during_read", removed_during_read);
  std::ofstream(dir + "/stats-" + role + "-" + std::to_string(k)) << c.Json() << "\n";
  return 0;
}

int Concurrency(int argc, char** argv) {
  std::string dir = "/tmp/chunkstore-concurrency", out;
  double seconds = 10;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--dir") dir = argv[i + 1];
    else if (k == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (k == "--json") out = argv[i + 1];
    else Die("concurrency: unknown flag " + k);
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    auto s = Store::Open(dir + "/store", CampaignOptions());
    if (!s.ok()) Die(s.status().ToString());
    for (uint64_t seed = 1; seed <= 8; ++seed) {
      const auto data = Payload(seed, 300000 + seed * 1000);
      auto r = (*s)->PublishBytes(data.data(), data.size(), "base/" + std::to_string(seed));
      if (!r.ok()) Die(r.status().ToString());
      JournalAppend(dir + "/registry", "P " + r->id + " base/" + std::to_string(seed) + " " +
                                           std::to_string(seed) + " " + std::to_string(data.size()));
    }
  }
  const std::string self = fs::read_symlink("/proc/self/exe");
  std::vector<pid_t> pids;
  auto spawn = [&](const std::string& role, int k) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execl(self.c_str(), self.c_str(), "concurrency-child", role.c_str(), dir.c_str(),
              std::to_string(k).c_str(), std::to_string(seconds).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  };
  for (int k = 0; k < 8; ++k) spawn("reader", k);
  for (int k = 0; k < 2; ++k) spawn("writer", k);
  spawn("gc", 0);
  int failed_children = 0;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed_children;
  }
  // Aggregate, then check that nothing registered and unremoved was lost.
  double ops = 0, errors = 0, busy = 0, wrong = 0, removed_reads = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string n = e.path().filename();
    if (n.rfind("stats-", 0) != 0) continue;
    std::ifstream f(e.path());
    std::string json((std::istreambuf_iterator<char>(f)), {});
    auto field = [&](const std::string& key) {
      const size_t at = json.find("\"" + key + "\": ");
      return at == std::string::npos ? 0.0 : std::atof(json.c_str() + at + key.size() + 4);
    };
    ops += field("ops");
    errors += field("errors");
    busy += field("busy");
    wrong += field("wrong_bytes");
    removed_reads += field("removed_during_read");
  }
  std::set<std::string> removed;
  const auto reg = Registry(dir, &removed);
  chunkstore::Options o = CampaignOptions();
  o.create_if_missing = false;
  auto s = Store::Open(dir + "/store", o);
  if (!s.ok()) Die(s.status().ToString());
  double lost = 0, checked = 0;
  for (const auto& e : reg) {
    if (removed.count(e.name)) continue;
    auto got = ReadAll(**s, e.name);
    ++checked;
    if (!got.ok() || *got != Payload(e.seed, e.size)) {
      ++lost;
      std::cerr << "lost " << e.name << ": " << (got.ok() ? "wrong bytes" : got.status().ToString()) << "\n";
    }
  }
  auto v = (*s)->Verify();
  if (!v.ok()) std::cerr << "verify failed: " << v.status().ToString() << "\n";
  else
    for (const auto& p : v->problems) std::cerr << "verify: " << p.kind << " " << p.message << "\n";
  Counters c;
  c.Set("seconds", seconds);
  c.Set("processes", static_cast<double>(pids.size()));
  c.Set("operations", ops);
  c.Set("errors", errors);
  c.Set("busy_retried", busy);
  c.Set("reads_of_removed_objects", removed_reads);
  c.Set("wrong_bytes", wrong);
  c.Set("publishes_checked_at_end", checked);
  c.Set("lost_publishes", lost);
  c.Set("verify_clean", v.ok() && !v->corrupt() ? 1 : 0);
  c.Set("failed_processes", failed_children);
  std::cout << "concurrency: " << c.Json() << "\n";
  if (!out.empty()) std::ofstream(out) << c.Json() << "\n";
  fs::remove_all(dir);
  return errors == 0 && wrong == 0 && lost == 0 && failed_children == 0 && v.ok() && !v->corrupt() ? 0 : 1;
}

}  // namespace campaign

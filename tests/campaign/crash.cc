// SPDX-License-Identifier: Apache-2.0
// The crash campaign: a child process publishes (large files, small
// batches), removes names and runs gc in a loop; the parent kills it with
// SIGKILL at random moments and, after each kill, reopens the store,
// verifies it, and checks that every publish that returned is readable
// byte-exact and that no object appears that was not fully published.
//
// The child journals each step durably: "S seed size" before a publish,
// "D name id" after it returned, "R name" before removing a name.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "common.h"
#include "hash/digest.h"
#include "payload.h"

namespace campaign {

namespace fs = std::filesystem;
using chunkstore::Store;

int CrashChild(const std::string& dir, uint64_t first, uint64_t seed) {
  const std::string journal = dir + "/journal";
  auto opened = Store::Open(dir + "/store", CampaignOptions());
  if (!opened.ok()) Die("child cannot open the store: " + opened.status().ToString());
  Store& store = **opened;
  std::mt19937_64 rng(seed);
  std::vector<std::string> names;
  for (const auto& line : ReadLines(journal))
    if (line[0] == 'D') names.push_back(line.substr(2, line.find(' ', 2) - 2));
  for (uint64_t i = first;; ++i) {
    // Keep the live set small so every check after a kill stays cheap.
    const int op = names.size() > 30 ? 8 : static_cast<int>(rng() % 10);
    if (op < 6) {
      const size_t size = 64 * 1024 + rng() % (3u << 20);
      JournalAppend(journal, "S " + std::to_string(i) + " " + std::to_string(size));
      const auto data = Payload(i, size);
      const std::string name = "obj/" + std::to_string(i);
      auto r = store.PublishBytes(data.data(), data.size(), name);
      if (!r.ok()) Die("publish failed: " + r.status().ToString());
      JournalAppend(journal, "D " + name + " " + r->id);
      names.push_back(name);
    } else if (op < 8) {
      auto batch = store.NewBatch();
      std::vector<std::string> batch_names;
      for (int k = 0; k < 8; ++k, ++i) {
        const size_t size = 100 + rng() % 4000;
        JournalAppend(journal, "S " + std::to_string(i) + " " + std::to_string(size));
        const auto data = Payload(i, size);
        batch_names.push_back("small/" + std::to_string(i));
        if (!batch->AddBytes(data.data(), data.size(), batch_names.back()).ok()) Die("batch add failed");
      }
      auto c = batch->Commit();
      if (!c.ok()) Die("batch commit failed: " + c.status().ToString());
      for (size_t k = 0; k < c->size(); ++k) {
        JournalAppend(journal, "D " + batch_names[k] + " " + (*c)[k].id);
        names.push_back(batch_names[k]);
      }
    } else if (op < 9 && names.size() > 4) {
      const size_t pick = names.size() > 30 ? 0 : rng() % names.size();
      JournalAppend(journal, "R " + names[pick]);
      store.RemoveName(names[pick]);  // NotFound if an earlier run removed it
      names.erase(names.begin() + static_cast<long>(pick));
    } else {
      chunkstore::GcOptions o;
      o.orphan_grace_seconds = 0;
      auto g = store.Gc(o);
      if (!g.ok() && !g.status().IsBusy()) Die("gc failed: " + g.status().ToString());
    }
  }
}

int Crash(int argc, char** argv) {
  std::string dir = "/tmp/chunkstore-crash", out;
  int kills = 50;
  uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--dir") dir = argv[i + 1];
    else if (k == "--kills") kills = std::atoi(argv[i + 1]);
    else if (k == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--json") out = argv[i + 1];
    else Die("crash: unknown flag " + k);
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string self = fs::read_symlink("/proc/self/exe");
  std::mt19937_64 rng(seed);
  std::map<uint64_t, std::string> expected_ids;  // payload seed -> object id
  std::set<std::string> checked;                 // names read back at least once
  Counters c;
  double kills_done = 0, lost = 0, wrong = 0, phantom = 0, verify_failed = 0, objects_checked = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int kill = 0; kill < kills; ++kill) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const std::string first = std::to_string(static_cast<uint64_t>(kill) * 100000 + 1);
      ::execl(self.c_str(), self.c_str(), "crash-child", dir.c_str(), first.c_str(),
              std::to_string(rng()).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 150));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (WIFEXITED(status)) Die("the child exited by itself (status " + std::to_string(WEXITSTATUS(status)) + ")");
    ++kills_done;

    // What the journal says returned, and which names may be gone.
    std::map<std::string, std::string> done;  // name -> id
    std::set<std::string> removed;
    std::vector<std::pair<uint64_t, size_t>> started;
    for (const auto& line : ReadLines(dir + "/journal")) {
      std::istringstream in(line.substr(2));
      if (line[0] == 'S') {
        uint64_t s;
        size_t size;
        in >> s >> size;
        started.emplace_back(s, size);
      } else if (line[0] == 'D') {
        std::string name, id;
        in >> name >> id;
        done[name] = id;
      } else if (line[0] == 'R') {
        removed.insert(line.substr(2));
      }
    }
    // A directory is a store once its config exists (docs/format.md): a kill
    // before that left only the start of a creation, which is no store.
    if (!fs::exists(dir + "/store/config")) continue;
    chunkstore::Options o = CampaignOptions();
    o.create_if_missing = false;
    auto opened = Store::Open(dir + "/store", o);
    if (!opened.ok()) Die("cannot reopen after kill " + std::to_string(kill) + ": " + opened.status().ToString());
    Store& store = **opened;
    auto v = store.Verify();
    if (!v.ok() || v->corrupt()) {
      ++verify_failed;
      if (!v.ok()) std::cerr << "kill " << kill << ": " << "verify failed: " << v.status().ToString() << "\n";
      else
        for (const auto& p : v->problems) std::cerr << "kill " << kill << ": " << p.kind << " " << p.message << "\n";
    }
    // Objects published since the last check are all read back; older ones
    // (already checked once) by a sample, so a long campaign stays linear.
    std::vector<std::string> older;
    for (const auto& [name, id] : done)
      if (!removed.count(name) && checked.count(name)) older.push_back(name);
    std::shuffle(older.begin(), older.end(), rng);
    if (older.size() > 40) older.resize(40);
    const std::set<std::string> sample(older.begin(), older.end());
    for (const auto& [name, id] : done) {
      if (removed.count(name)) continue;
      if (checked.count(name) && !sample.count(name)) continue;
      checked.insert(name);
      const uint64_t s = std::stoull(name.substr(name.find('/') + 1));
      size_t size = 0;
      for (const auto& [ss, sz] : started)
        if (ss == s) size = sz;
      auto got = store.Resolve(name);
      if (!got.ok() || *got != id) {
        ++lost;
        std::cerr << "kill " << kill << ": lost " << name << "\n";
        continue;
      }
      auto bytes = ReadAll(store, id);
      ++objects_checked;
      if (!bytes.ok()) {
        ++lost;
        std::cerr << "kill " << kill << ": cannot read " << name << ": " << bytes.status().ToString() << "\n";
      } else if (*bytes != Payload(s, size)) {
        ++wrong;
      }
    }
    // Every object present must be a payload whose publish started.
    std::set<std::string> allowed;
    for (const auto& [s, size] : started) {
      auto it = expected_ids.find(s);
      if (it == expected_ids.end()) {
        const auto data = Payload(s, size);
        it = expected_ids.emplace(s, chunkstore::internal::Sha256::Of(data.data(), data.size()).ObjectId()).first;
      }
      allowed.insert(it->second);
    }
    auto named = store.List();
    auto unnamed = store.ListUnnamed();
    if (!named.ok() || !unnamed.ok()) Die("cannot list the store");
    for (const auto& e : *named)
      if (!allowed.count(e.id)) ++phantom;
    for (const auto& e : *unnamed)
      if (!allowed.count(e.id)) ++phantom;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.Set("kills", kills_done);
  c.Set("objects_checked", objects_checked);
  c.Set("objects_lost", lost);
  c.Set("wrong_bytes", wrong);
  c.Set("phantom_objects", phantom);
  c.Set("verify_failures", verify_failed);
  c.Set("seconds", secs);
  std::cout << "crash: " << c.Json() << "\n";
  if (!out.empty()) std::ofstream(out) << c.Json() << "\n";
  fs::remove_all(dir);
  return lost == 0 && wrong == 0 && phantom == 0 && verify_failed == 0 ? 0 : 1;
}

}  // namespace campaign

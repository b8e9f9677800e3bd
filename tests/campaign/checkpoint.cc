// SPDX-License-Identifier: Apache-2.0
// The checkpoint campaign: kill -9 at every step of a commit that writes a
// checkpoint of the change log. A store is made whose next commit is due
// for a checkpoint; a probe counts the file operations of that commit
// (and of one more after it); then, for every step n, a fresh copy of the
// store gets a child process that publishes into it and is killed with
// SIGKILL just before operation n. After each kill the parent reopens the
// store and checks: every publish the child acknowledged (journaled) is
// there byte-exact, nothing else appeared, verify finds nothing, the log
// takes another commit, and an index rebuilt from the log shows the same.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <set>

#include "common.h"
#include "fault_env.h"
#include "payload.h"

namespace campaign {

namespace fs = std::filesystem;
using chunkstore::Store;

namespace {

constexpr int kBefore = 4;  // objects in the store before the checkpointing commit

chunkstore::Options CheckpointOptions(chunkstore::Env* env, uint64_t checkpoint_bytes) {
  chunkstore::Options o = CampaignOptions();
  o.env = env;
  o.checkpoint_bytes = checkpoint_bytes;
  return o;
}

std::vector<uint8_t> Object(int i) { return Payload(7000 + static_cast<uint64_t>(i), 40000 + 3000 * static_cast<size_t>(i)); }

// The child's work: the publish that checkpoints, then one more. Each is
// journaled once it returned. kill_at 0: count the operations instead.
int Child(const std::string& store, const std::string& journal, int kill_at) {
  chunkstore::testing::FaultEnv env(chunkstore::Env::Posix());
  auto s = Store::Open(store, CheckpointOptions(&env, 1));
  if (!s.ok()) Die("child cannot open the store: " + s.status().ToString());
  env.KillAt(kill_at);
  for (int i = kBefore; i < kBefore + 2; ++i) {
    const auto d = Object(i);
    auto r = (*s)->PublishBytes(d.data(), d.size(), "o" + std::to_string(i));
    if (!r.ok()) Die("child publish failed: " + r.status().ToString());
    JournalAppend(journal, "D o" + std::to_string(i));
  }
  if (kill_at == 0) JournalAppend(journal, "N " + std::to_string(env.count()));
  return 0;
}

pid_t Spawn(const std::string& store, const std::string& journal, int kill_at) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The child runs in a fresh process image: no threads of the parent.
    const std::string self = fs::read_symlink("/proc/self/exe");
    ::execl(self.c_str(), self.c_str(), "checkpoint-child", store.c_str(), journal.c_str(),
            std::to_string(kill_at).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

int CheckpointChild(const std::string& store, const std::string& journal, int kill_at) {
  return Child(store, journal, kill_at);
}

int Checkpoint(int argc, char** argv) {
  std::string dir = "/tmp/chunkstore-checkpoint", out;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--dir") dir = argv[i + 1];
    else if (k == "--json") out = argv[i + 1];
    else Die("checkpoint: unknown flag " + k);
  }
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string tmpl = dir + "/template";
  {
    auto s = Store::Open(tmpl, CheckpointOptions(nullptr, 1ull << 30));
    if (!s.ok()) Die("cannot create the store: " + s.status().ToString());
    for (int i = 0; i < kBefore; ++i) {
      const auto d = Object(i);
      if (!(*s)->PublishBytes(d.data(), d.size(), "o" + std::to_string(i)).ok()) Die("cannot fill the store");
    }
  }
  // How many operations the two publishes take, the checkpoint among them.
  fs::copy(tmpl, dir + "/probe", fs::copy_options::recursive);
  int status = 0;
  ::waitpid(Spawn(dir + "/probe", dir + "/probe-journal", 0), &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) Die("the probe failed");
  int total = 0;
  for (const auto& line : ReadLines(dir + "/probe-journal"))
    if (line[0] == 'N') total = std::stoi(line.substr(2));
  if (total < 10) Die("the probe counted only " + std::to_string(total) + " operations");
  bool checkpointed = false;
  for (auto& e : fs::directory_iterator(dir + "/probe/log"))
    checkpointed |= e.path().extension() == ".log" && e.path().filename() != "00000000000000000001.log";
  if (!checkpointed) Die("the probe's commits wrote no checkpoint");

  double kills = 0, lost = 0, phantom = 0, wrong = 0, verify_failed = 0, stuck = 0;
  for (int n = 1; n <= total; ++n) {
    const std::string round = dir + "/round", journal = dir + "/journal";
    fs::remove_all(round);
    fs::remove(journal);
    fs::copy(tmpl, round, fs::copy_options::recursive);
    ::waitpid(Spawn(round, journal, n), &status, 0);
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) Die("step " + std::to_string(n) + ": the child was not killed");
    ++kills;
    std::set<std::string> acked;
    for (const auto& line : ReadLines(journal))
      if (line[0] == 'D') acked.insert(line.substr(2));
    const std::string when = "kill before operation " + std::to_string(n);
    for (bool rebuild : {false, true}) {
      chunkstore::Options o = CheckpointOptions(nullptr, 1);
      o.create_if_missing = false;
      o.rebuild_index = rebuild;
      auto s = Store::Open(round, o);
      if (!s.ok()) Die(when + ": cannot reopen: " + s.status().ToString());
      auto listed = (*s)->List();
      if (!listed.ok()) Die(when + ": cannot list");
      std::set<std::string> present;
      for (const auto& e : *listed) present.insert(e.name);
      for (int i = 0; i < kBefore + 3; ++i) {
        const std::string name = "o" + std::to_string(i);
        const bool must = i < kBefore || acked.count(name) || (rebuild && present.count(name));
        if (!present.count(name)) {
          if (must) {
            ++lost;
            std::cerr << when << ": lost " << name << (rebuild ? " (after a rebuild)" : "") << "\n";
          }
          continue;
        }
        if (i >= kBefore + 2 && !rebuild) ++phantom;
        auto bytes = ReadAll(**s, name);
        if (!bytes.ok() || *bytes != Object(i)) {
          ++wrong;
          std::cerr << when << ": " << name << " reads back wrong\n";
        }
      }
      auto v = (*s)->Verify();
      if (!v.ok() || v->corrupt()) {
        ++verify_failed;
        if (!v.ok()) std::cerr << when << ": " << "verify failed: " << v.status().ToString() << "\n";
        else
          for (const auto& p : v->problems) std::cerr << when << ": " << p.kind << " " << p.message << "\n";
      }
      if (!rebuild) {
        // The log takes a commit after wherever the kill left it.
        const auto d = Object(kBefore + 2);
        if (!(*s)->PublishBytes(d.data(), d.size(), "o" + std::to_string(kBefore + 2)).ok()) ++stuck;
      }
    }
  }
  Counters c;
  c.Set("steps", total);
  c.Set("kills", kills);
  c.Set("lost", lost);
  c.Set("phantom", phantom);
  c.Set("wrong_bytes", wrong);
  c.Set("verify_failed", verify_failed);
  c.Set("stuck", stuck);
  const std::string json = c.Json();
  std::cout << json << "\n";
  if (!out.empty()) {
    FILE* f = std::fopen(out.c_str(), "w");
    if (f) {
      std::fprintf(f, "%s\n", json.c_str());
      std::fclose(f);
    }
  }
  return lost == 0 && phantom == 0 && wrong == 0 && verify_failed == 0 && stuck == 0 ? 0 : 1;
}

}  // namespace campaign

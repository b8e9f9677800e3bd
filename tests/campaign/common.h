// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the chunkstore-torture campaigns.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "chunkstore/store.h"

namespace campaign {

// Chunk sizes small enough that campaign objects span many chunks, and a
// log folded into checkpoints often.
inline chunkstore::Options CampaignOptions() {
  chunkstore::Options o;
  o.chunking.min_size = 16 << 10;
  o.chunking.avg_size = 64 << 10;
  o.chunking.max_size = 256 << 10;
  o.busy_timeout_ms = 30000;
  // Checkpoints every few dozen commits, so that kills and concurrent
  // writers meet them too.
  o.checkpoint_bytes = 64 << 10;
  return o;
}

[[noreturn]] inline void Die(const std::string& what) {
  std::fprintf(stderr, "chunkstore-torture: %s\n", what.c_str());
  std::exit(1);
}

// Appends one line to a journal and makes it durable before returning.
void JournalAppend(const std::string& path, const std::string& line);
std::vector<std::string> ReadLines(const std::string& path);

// Reads a whole object by ref; NotFound and errors come back as Status.
chunkstore::Result<std::vector<uint8_t>> ReadAll(chunkstore::Store& store, const std::string& ref);

struct Counters {
  std::vector<std::pair<std::string, double>> values;
  void Set(const std::string& k, double v) {
    for (auto& kv : values)
      if (kv.first == k) {
        kv.second = v;
        return;
      }
    values.emplace_back(k, v);
  }
  std::string Json() const;
};

int Crash(int argc, char** argv);
int CrashChild(const std::string& dir, uint64_t first, uint64_t seed);
int Corrupt(int argc, char** argv);
int Concurrency(int argc, char** argv);
int Checkpoint(int argc, char** argv);
int CheckpointChild(const std::string& store, const std::string& journal, int kill_at);
int ConcurrencyChild(const std::string& role, const std::string& dir, int k, double seconds);

}  // namespace campaign

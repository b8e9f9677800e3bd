// SPDX-License-Identifier: Apache-2.0
// chunkstore-torture: the reliability campaigns (docs/reliability.md).
//
//   chunkstore-torture crash [--kills N] [--seed S] [--dir D] [--json F]
//   chunkstore-torture corrupt [--trials N] [--seed S] [--dir D] [--json F]
//   chunkstore-torture concurrency [--seconds T] [--dir D] [--json F]
//   chunkstore-torture checkpoint [--dir D] [--json F]
//
// Each exits 0 only when its invariants held (no lost objects, no wrong
// bytes, ...), and prints its figures as one JSON line.
#include <cstring>
#include <iostream>

#include "common.h"

int main(int argc, char** argv) {
  if (argc >= 2) {
    const std::string cmd = argv[1];
    if (cmd == "crash") return campaign::Crash(argc, argv);
    if (cmd == "corrupt") return campaign::Corrupt(argc, argv);
    if (cmd == "concurrency") return campaign::Concurrency(argc, argv);
    if (cmd == "checkpoint") return campaign::Checkpoint(argc, argv);
    if (cmd == "checkpoint-child" && argc == 5) return campaign::CheckpointChild(argv[2], argv[3], std::atoi(argv[4]));
    if (cmd == "crash-child" && argc == 5)
      return campaign::CrashChild(argv[2], std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10));
    if (cmd == "concurrency-child" && argc == 6)
      return campaign::ConcurrencyChild(argv[2], argv[3], std::atoi(argv[4]), std::atof(argv[5]));
  }
  std::cerr << "usage: chunkstore-torture crash|corrupt|concurrency|checkpoint [--flags]\n";
  return 2;
}

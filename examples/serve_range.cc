// SPDX-License-Identifier: Apache-2.0
// Write a byte range of an object to stdout, verified: what a server
// answering an HTTP Range request would do.
//
//   serve_range STORE_DIR REF OFFSET LENGTH
#include <chunkstore/store.h>

#include <cstdlib>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: serve_range STORE_DIR REF OFFSET LENGTH\n";
    return 2;
  }
  chunkstore::Options options;
  options.create_if_missing = false;
  auto store = chunkstore::Store::Open(argv[1], options);
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
  auto reader = (*store)->OpenReader(argv[2]);
  if (!reader.ok()) {
    std::cerr << reader.status().ToString() << "\n";
    return reader.status().IsNotFound() ? 3 : 1;
  }
  uint64_t offset = std::strtoull(argv[3], nullptr, 10);
  uint64_t remaining = std::strtoull(argv[4], nullptr, 10);
  std::vector<char> buf(64 * 1024);
  while (remaining > 0) {
    // ReadAt clips at the end of the object and returns 0 past it.
    auto n = (*reader)->ReadAt(offset, buf.data(), std::min<uint64_t>(buf.size(), remaining));
    if (!n.ok()) {
      // Corruption names the object and chunk; never serve unverified bytes.
      std::cerr << n.status().ToString() << "\n";
      return n.status().IsCorruption() ? 4 : 1;
    }
    if (*n == 0) break;
    std::cout.write(buf.data(), static_cast<std::streamsize>(*n));
    offset += *n;
    remaining -= *n;
  }
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Publish a file into a store and print its id.
//
//   publish_file STORE_DIR FILE [NAME]
#include <chunkstore/store.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: publish_file STORE_DIR FILE [NAME]\n";
    return 2;
  }
  auto store = chunkstore::Store::Open(argv[1]);  // created on first use
  if (!store.ok()) {
    std::cerr << "cannot open store: " << store.status().ToString() << "\n";
    return 1;
  }
  auto published = (*store)->PublishFile(argv[2], argc > 3 ? argv[3] : "");
  if (!published.ok()) {
    std::cerr << "cannot publish: " << published.status().ToString() << "\n";
    return 1;
  }
  std::cout << published->id << "\n";
  std::cerr << published->size << " bytes, " << published->chunks << " chunks, "
            << published->reused_chunks << " already stored\n";
  return 0;
}

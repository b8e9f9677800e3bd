// SPDX-License-Identifier: Apache-2.0
// Publish every regular file below a directory in one batch: one index
// transaction, so all of them become visible at once or none do.
//
//   publish_dir STORE_DIR DIR PREFIX
#include <chunkstore/store.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: publish_dir STORE_DIR DIR PREFIX\n";
    return 2;
  }
  namespace fs = std::filesystem;
  auto store = chunkstore::Store::Open(argv[1]);
  if (!store.ok()) {
    std::cerr << store.status().ToString() << "\n";
    return 1;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(argv[2]))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  auto batch = (*store)->NewBatch();
  // Optional: lets a helper thread read small files ahead of AddFile.
  batch->Prefetch(std::vector<std::string>(files.begin(), files.end()));
  for (const fs::path& f : files) {
    const std::string name = std::string(argv[3]) + "/" + f.lexically_relative(argv[2]).generic_string();
    auto added = batch->AddFile(f.string(), name);
    if (!added.ok()) {
      std::cerr << added.status().ToString() << "\n";
      return 1;  // the batch is dropped: nothing of it becomes visible
    }
  }
  auto committed = batch->Commit();
  if (!committed.ok()) {
    std::cerr << committed.status().ToString() << "\n";
    return 1;
  }
  for (const auto& r : *committed) std::cout << r.name << " " << r.id << "\n";
  return 0;
}

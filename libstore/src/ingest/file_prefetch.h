// SPDX-License-Identifier: Apache-2.0
// Read-ahead of small input files for a batch publish.
//
// Publishing thousands of small files spends about as long in open, read
// and close as in hashing and indexing them. Given the list of files a
// batch is about to add, a helper thread opens and reads the small ones
// ahead, in list order, so one file's system calls overlap the publishing
// of the files before it. Files above a size limit are only opened ahead
// and handed over open (the ingest pipeline reads them in large pieces).
//
// Thread safety: one consumer thread calls Take; the helper thread is
// internal. The destructor stops and joins it.
#ifndef CHUNKSTORE_FILE_PREFETCH_H_
#define CHUNKSTORE_FILE_PREFETCH_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chunkstore/status.h"
#include "ingest/source.h"

namespace chunkstore::internal {

class FilePrefetcher {
 public:
  // What the helper found for one path.
  struct Item {
    std::string path;
    Status status;              // an error opening or reading it, as FileSource reports it
    bool read = false;          // bytes hold the whole file
    std::vector<uint8_t> bytes;
    std::unique_ptr<FileSource> file;  // a file above the limit, open
    // Neither read nor file (a file that grew while read): open it again.
  };

  // Reads files of at most max_file_bytes, keeping at most `depth` items
  // waiting to be taken.
  FilePrefetcher(std::vector<std::string> paths, size_t max_file_bytes, size_t depth);
  ~FilePrefetcher();
  FilePrefetcher(const FilePrefetcher&) = delete;
  FilePrefetcher& operator=(const FilePrefetcher&) = delete;

  // The item for `path` if it is the next path of the list (waiting for
  // the helper if need be); nullopt otherwise, and then the prefetcher has
  // stopped for good: the caller reads its files itself from then on.
  std::optional<Item> Take(const std::string& path);

 private:
  void Run();
  Item Fetch(const std::string& path) const;
  void Stop();

  const std::vector<std::string> paths_;
  const size_t max_file_bytes_;
  const size_t depth_;
  size_t next_take_ = 0;  // consumer's position in paths_
  size_t claimed_ = 0;    // paths_[claimed_ ...] nobody has started reading
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<size_t, Item> ready_;  // read ahead, by index in paths_
  bool stop_ = false;
  bool helper_waits_ = false, taker_waits_ = false;
  std::thread thread_;
};

}  // namespace chunkstore::internal

#endif  // CHUNKSTORE_FILE_PREFETCH_H_

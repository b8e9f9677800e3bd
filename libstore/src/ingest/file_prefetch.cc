// SPDX-License-Identifier: Apache-2.0
// The helper thread of FilePrefetcher (see file_prefetch.h). Files are
// opened through FileSource, so an input that cannot be published fails
// with the same message whether or not it was read ahead.
#include "ingest/file_prefetch.h"

#include <utility>


namespace chunkstore::internal {

FilePrefetcher::FilePrefetcher(std::vector<std::string> paths, size_t max_file_bytes, size_t depth)
    : paths_(std::move(paths)), max_file_bytes_(max_file_bytes), depth_(depth < 1 ? 1 : depth) {
  thread_ = std::thread([this] { Run(); });
}

FilePrefetcher::~FilePrefetcher() { Stop(); }

void FilePrefetcher::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

FilePrefetcher::Item FilePrefetcher::Fetch(const std::string& path) const {
  Item item;
  item.path = path;
  Result<std::unique_ptr<FileSource>> file = FileSource::Open(path);
  if (!file.ok()) {
    item.status = file.status();
    return item;
  }
  const uint64_t size = *(*file)->Size();
  if (size > max_file_bytes_) {
    item.file = std::move(*file);
    return item;
  }
  // One byte more than stat said, to see the end of a file that grew.
  item.bytes.resize(static_cast<size_t>(size) + 1);
  size_t have = 0;
  while (have < item.bytes.size()) {
    Result<size_t> r = (*file)->Read(item.bytes.data() + have, item.bytes.size() - have);
    if (!r.ok()) {
      item.status = r.status();
      item.bytes.clear();
      return item;
    }
    if (*r == 0) break;
    have += *r;
  }
  if (have > size) {
    item.bytes.clear();  // the ordinary path reads it again, to its end
    return item;
  }
  item.bytes.resize(have);
  item.read = true;
  return item;
}

// The threads wake each other only when one has nothing to do: a wake-up
// per file costs about as much as the system calls that reading ahead moves
// off the publishing thread. So the helper refills from half empty, and the
// publishing thread, when the file it needs is not read yet, reads that one
// itself if nobody has started on it, or else a later one, instead of
// sleeping.
void FilePrefetcher::Run() {
  for (;;) {
    size_t index;
    {
      std::unique_lock<std::mutex> l(mu_);
      if (ready_.size() >= depth_) {
        helper_waits_ = true;
        cv_.wait(l, [&] { return stop_ || ready_.size() <= depth_ / 2; });
        helper_waits_ = false;
      }
      if (stop_ || claimed_ == paths_.size()) return;
      index = claimed_++;
    }
    Item item = Fetch(paths_[index]);
    bool wake;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return;
      ready_.emplace(index, std::move(item));
      wake = taker_waits_;
    }
    if (wake) cv_.notify_all();
  }
}

std::optional<FilePrefetcher::Item> FilePrefetcher::Take(const std::string& path) {
  {
    std::unique_lock<std::mutex> l(mu_);
    if (!stop_ && next_take_ < paths_.size() && paths_[next_take_] == path) {
      const size_t want = next_take_++;
      for (;;) {
        auto it = ready_.find(want);
        if (it != ready_.end()) {
          Item item = std::move(it->second);
          ready_.erase(it);
          const bool wake = helper_waits_ && ready_.size() <= depth_ / 2;
          l.unlock();
          if (wake) cv_.notify_all();
          return item;
        }
        if (claimed_ == want) {  // nobody has started on it
          ++claimed_;
          l.unlock();
          return Fetch(path);
        }
        if (claimed_ < paths_.size() && ready_.size() < depth_) {
          // The helper is reading it: read a later one meanwhile.
          const size_t index = claimed_++;
          l.unlock();
          Item item = Fetch(paths_[index]);
          l.lock();
          ready_.emplace(index, std::move(item));
          continue;
        }
        taker_waits_ = true;
        cv_.wait(l, [&] { return ready_.count(want) != 0; });
        taker_waits_ = false;
      }
    }
  }
  Stop();
  return std::nullopt;
}

}  // namespace chunkstore::internal

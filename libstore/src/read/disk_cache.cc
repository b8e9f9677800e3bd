// SPDX-License-Identifier: Apache-2.0
// DiskChunkCache (disk_cache.h): one file per chunk under a two-hex-digit
// fan-out, written by rename, evicted by mtime.
#include "read/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <vector>

namespace chunkstore::internal {

namespace fs = std::filesystem;

DiskChunkCache::DiskChunkCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}

std::string DiskChunkCache::PathOf(const Digest& id) const {
  const std::string hex = id.Hex();
  return dir_ + "/" + hex.substr(0, 2) + "/" + hex;
}

bool DiskChunkCache::Get(const Digest& id, size_t raw_len, Buffer* out) {
  // O_NONBLOCK: something other than a file planted there (a FIFO) must
  // not hang the read; it fails the regular-file check below.
  const int fd = ::open(PathOf(id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == raw_len;
  if (ok) {
    out->Resize(raw_len);
    size_t done = 0;
    while (done < raw_len) {
      const ssize_t got = ::pread(fd, out->data() + done, raw_len - done, static_cast<off_t>(done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) break;
      done += static_cast<size_t>(got);
    }
    ok = done == raw_len;
    // Recently used: eviction goes by mtime.
    if (ok) ::futimens(fd, nullptr);
  }
  ::close(fd);
  return ok;
}

void DiskChunkCache::Put(const Digest& id, const uint8_t* data, size_t n) {
  if (max_bytes_ == 0 || n > max_bytes_) return;
  const std::string path = PathOf(id);
  const std::string sub = path.substr(0, path.rfind('/'));
  static std::atomic<uint64_t> serial{0};
  const std::string tmp = sub + "/.tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) {
    std::error_code ec;
    fs::create_directories(sub, ec);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) return;
  size_t done = 0;
  while (done < n) {
    const ssize_t put = ::write(fd, data + done, n - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    done += static_cast<size_t>(put);
  }
  // No fsync: a file a crash cut short fails its length or SHA-256 check
  // when read, and is fetched again.
  const bool ok = ::close(fd) == 0 && done == n;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  bytes_ += n;
  if (!counted_ || bytes_ > rescan_above_) EvictLocked();
}

void DiskChunkCache::Drop(const Digest& id) { ::unlink(PathOf(id).c_str()); }

namespace {

bool IsHex(const std::string& s, size_t n) {
  return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

// Counts the directory (the first time, and whenever this process's count
// says it is over) and removes the least recently used files until it
// holds at most 90 % of the limit. Only what this cache writes counts and
// is ever removed: files named by a chunk id, or a writer's temporary
// file, in a fan-out directory named by two hex digits; each removed
// relative to its directory, opened without following a symlink, so a
// directory swapped for a link meanwhile leads nowhere else. Temporary
// files of writers that died are old by their mtime and go first.
void DiskChunkCache::EvictLocked() {
  struct Entry {
    int64_t mtime;
    uint64_t size;
    std::string sub, name;
    bool operator<(const Entry& o) const { return mtime < o.mtime; }
  };
  std::vector<Entry> files;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator d(dir_, ec), end; !ec && d != end; d.increment(ec)) {
    const std::string sub = d->path().filename().string();
    if (!IsHex(sub, 2)) continue;
    const int fd = ::open((dir_ + "/" + sub).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    std::error_code ec2;
    for (fs::directory_iterator f(d->path(), ec2), fend; !ec2 && f != fend; f.increment(ec2)) {
      const std::string name = f->path().filename().string();
      if (!IsHex(name, 64) && name.rfind(".tmp-", 0) != 0) continue;
      struct stat st;
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      files.push_back({int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, uint64_t(st.st_size), sub, name});
      total += uint64_t(st.st_size);
    }
    ::close(fd);
  }
  counted_ = true;
  bytes_ = total;
  if (total > max_bytes_) {
    std::sort(files.begin(), files.end());
    const uint64_t target = max_bytes_ / 10 * 9;
    int fd = -1;
    std::string open_sub;
    for (const Entry& e : files) {
      if (bytes_ <= target) break;
      if (e.sub != open_sub) {
        if (fd >= 0) ::close(fd);
        fd = ::open((dir_ + "/" + e.sub).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        open_sub = e.sub;
      }
      if (fd >= 0 && (::unlinkat(fd, e.name.c_str(), 0) == 0 || errno == ENOENT)) bytes_ -= std::min(bytes_, e.size);
    }
    if (fd >= 0) ::close(fd);
  }
  // What could not be removed (another user's files) is not scanned for
  // again on every write: once eviction fell short of its target, only
  // once writes added a tenth of the limit. A directory found under the
  // limit, or brought down to the target, is scanned again as soon as
  // this count passes the limit: a count that ran high (a chunk written
  // twice, a file seen under both of its names mid-rename) must not let
  // the cache rest above its limit.
  const bool settled = total <= max_bytes_ || bytes_ <= max_bytes_ / 10 * 9;
  rescan_above_ = settled ? max_bytes_ : std::max(max_bytes_, bytes_ + max_bytes_ / 10);
}

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// The read path of `chunkstore mount` (mount_read.h): the cursor, the
// bytes it keeps for reads the kernel sent out of order, and the views of
// verified chunks each answer is made of.
#include "mount_read.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace cli {

using chunkstore::Status;

namespace {

// Reads of one handle arrive out of order: the kernel's read-ahead has
// requests under way for up to two windows of its read-ahead, a read that
// waits for a page overtakes them, and the daemon's threads take them in
// any order. While a handle is read in order, a read that far ahead of the
// cursor (twice that, for a file its reader declared sequential, which
// doubles its window; twice that again, as a margin: a read counted as a
// jump sends the reads after it at random) still counts as in order: the
// cursor moves to it,
// and the bytes it passes are kept for the reads it overtook. A read
// further ahead is a jump, read at random: moving the cursor would read
// and verify what nobody asked for. So is any read ahead of the cursor
// after a read at random (a reader reading at random jumps ahead as often
// as back), until a read lands on the cursor again.
// The window is never below kMinSequentialWindow (mount_read.h), nor above
// kMaxSequentialWindow.
constexpr uint64_t kMaxSequentialWindow = 64 << 20;
// A read is answered with at most this many views of verified chunks.
constexpr size_t kMaxViews = 16;
// At most this many runs of bytes are kept for overtaken reads per file.
constexpr size_t kMaxStashed = 64;

// Keeps [r.Tell(), offset) for the reads it overtook, moving the cursor
// to offset. What it kept is bounded three ways: bytes (one window),
// entries (a reader asking for a byte at a time past the cursor would
// otherwise pile up entries of one byte), and age (what lies more than
// two windows behind the cursor is nothing the kernel still has under
// way).
Status StashGap(FileHandle& h, uint64_t offset) {
  chunkstore::Reader& r = *h.reader;
  if (offset <= r.Tell()) return Status::OK();
  Stashed s{r.Tell(), {}};
  s.bytes.reserve(static_cast<size_t>(offset - r.Tell()));
  Status failed;
  while (r.Tell() < offset) {
    auto view = r.ReadView(static_cast<size_t>(offset - r.Tell()));
    if (!view.ok()) {
      failed = view.status();  // what was read before the damage is kept
      break;
    }
    if (view->size == 0) break;
    s.bytes.insert(s.bytes.end(), view->data, view->data + view->size);
  }
  if (!s.bytes.empty()) {
    h.stashed += s.bytes.size();
    h.stash.push_back(std::move(s));
  }
  const uint64_t cursor = r.Tell();
  size_t drop = 0;
  while (drop + 1 < h.stash.size() &&
         (h.stashed > h.window || h.stash.size() - drop > kMaxStashed ||
          h.stash[drop].offset + h.stash[drop].bytes.size() + 2 * h.window < cursor))
    h.stashed -= h.stash[drop++].bytes.size();
  h.stash.erase(h.stash.begin(), h.stash.begin() + static_cast<std::ptrdiff_t>(drop));
  return failed;
}

// Answers a read the cursor passed from what it kept, if it kept all of
// it.
bool AnswerFromStash(fuse_req_t req, FileHandle& h, uint64_t offset, size_t size) {
  for (size_t i = 0; i < h.stash.size(); ++i) {
    Stashed& s = h.stash[i];
    if (offset < s.offset || offset + size > s.offset + s.bytes.size()) continue;
    fuse_reply_buf(req, s.bytes.data() + (offset - s.offset), size);
    s.handed += size;
    if (s.handed >= s.bytes.size()) {
      h.stashed -= s.bytes.size();
      h.stash.erase(h.stash.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return true;
  }
  return false;
}

}  // namespace

Status AnswerRead(fuse_req_t req, FileHandle& h, uint64_t offset, size_t size) {
  chunkstore::Reader& r = *h.reader;
  if (offset >= r.size() || size == 0) {
    fuse_reply_buf(req, nullptr, 0);
    return Status::OK();
  }
  size = static_cast<size_t>(std::min<uint64_t>(size, r.size() - offset));
  const uint64_t last_end = h.last_end;
  h.last_end = offset + size;  // what a read that continues this one starts at
  if (AnswerFromStash(req, h, offset, size)) {
    h.random_run = 0;
    return Status::OK();
  }
  thread_local std::vector<char> buf;
  if (buf.size() < size) buf.resize(size);
  size_t got = 0;
  // In order: at the cursor, ahead of it (a read that overtook the ones
  // before it: the cursor keeps what it passes for them), or back at the
  // start. The cursor skips no bytes to reach a read ahead of it, so that a
  // read from the start to the end keeps proving the object's id (the
  // reader stops proving on a seek). Anything else, behind the cursor or far ahead, is read at
  // random, which leaves the cursor and its proof alone. On a bucket
  // store an open file's first read is taken at random even at the start:
  // it may be all that is read (a file's header), and the in-order path
  // fetches the next chunk too (a chained read checks a chunk with it).
  // While the reads go on from the start, each where the last ended, they
  // count as in order. The third read taken at random in a row, each after
  // the first starting where the one before ended (a file read in order
  // from its middle), moves the cursor there: from then on the read verifies ahead
  // on other threads, though it proves nothing of the object's id. Reads
  // in order never start such a run: a request the kernel sent early that
  // comes behind the cursor must not pull it back.
  const uint64_t at = r.Tell();
  const bool first = last_end == kNoRead;
  const bool continues = !first && offset == last_end;
  h.from_start = first ? offset == 0 : h.from_start && continues;
  bool sequential = false;
  if (!(h.remote && first)) {
    sequential = offset == 0 || offset == at ||
                 ((h.streaming || (h.remote && h.from_start)) && offset > at && offset <= at + h.window);
  }
  // Not for a read less than a window behind the cursor: that is one the
  // kernel sent early (its bytes missed what the cursor kept), and the
  // reads after it are still ahead.
  const bool resume = !sequential && continues && h.random_run >= 2 && !(offset < at && at - offset <= h.window);
  h.random_run = sequential || resume ? 0 : continues ? h.random_run + 1 : 1;
  if ((sequential && offset == 0 && at != 0) || resume) {
    h.stash.clear();
    h.stashed = 0;
    CHUNKSTORE_RETURN_IF_ERROR(r.Seek(offset));
    sequential = true;
  }
  // A gap the cursor cannot pass (a damaged chunk) is no reason to fail a
  // read of other bytes: that read is taken at random. The cursor stays
  // where it stopped.
  if (sequential && !StashGap(h, offset).ok()) sequential = false;
  h.streaming = sequential;
  if (sequential) {
    // ReadViews verifies the chunks ahead on other threads; the answer is
    // a view of each verified chunk it covers, copied only by the kernel.
    chunkstore::ByteView views[kMaxViews];
    auto count = r.ReadViews(size, views, kMaxViews);
    if (!count.ok()) return count.status();
    iovec iov[kMaxViews];
    for (size_t i = 0; i < *count; ++i) {
      iov[i] = {const_cast<uint8_t*>(views[i].data), views[i].size};
      got += views[i].size;
    }
    if (got == size) {
      fuse_reply_iov(req, iov, static_cast<int>(*count));
      return Status::OK();
    }
    // Chunks smaller than a read's share of kMaxViews: copied together.
    got = 0;
    for (size_t i = 0; i < *count; ++i) {
      std::memcpy(buf.data() + got, views[i].data, views[i].size);
      got += views[i].size;
    }
    while (got < size) {
      auto n = r.Read(buf.data() + got, size - got);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      got += *n;
    }
  } else {
    while (got < size) {
      auto n = r.ReadAt(offset + got, buf.data() + got, size - got);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      got += *n;
    }
  }
  fuse_reply_buf(req, buf.data(), got);
  return Status::OK();
}

uint64_t SequentialWindow(const std::string& read_ahead_file) {
  uint64_t kib = 0;
  if (!read_ahead_file.empty()) {
    const int fd = ::open(read_ahead_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      char text[32];
      const ssize_t n = ::read(fd, text, sizeof text - 1);
      ::close(fd);
      if (n > 0) {
        text[n] = 0;
        kib = std::strtoull(text, nullptr, 10);
      }
    }
  }
  kib = std::min<uint64_t>(kib, kMaxSequentialWindow >> 10);
  return std::clamp<uint64_t>(8 * kib * 1024, kMinSequentialWindow, kMaxSequentialWindow);
}

}  // namespace cli

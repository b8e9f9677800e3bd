// Buffer: a byte array whose contents are left uninitialized on resize.
// Chunk buffers are always filled completely by a read or an inflate, so
// the zero-fill std::vector would do is pure cost on the read path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace chunkstore::internal {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Resize(n); }
  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Contents are not preserved when the buffer grows. `reserve` asks for
  // room beyond n, so that later, slightly larger sizes fit too.
  void Resize(size_t n, size_t reserve = 0) {
    if (n > capacity_) {
      const size_t want = reserve > n ? reserve : n;
      bytes_.reset(new uint8_t[want]);
      capacity_ = want;
    }
    size_ = n;
  }

 private:
  std::unique_ptr<uint8_t[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace chunkstore::internal

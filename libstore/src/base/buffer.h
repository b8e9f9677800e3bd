// SPDX-License-Identifier: Apache-2.0
// Buffer: a byte array whose contents are left uninitialized on resize.
// Chunk buffers are always filled completely by a read or an inflate, so
// the zero-fill std::vector would do is pure cost on the read path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace chunkstore::internal {

// Frees chunk memory: from malloc, or (mapped > 0) a mapping of that many
// bytes (Buffer::ExactCopy).
struct FreeBytes {
  size_t mapped = 0;
  void operator()(uint8_t* p) const {
    if (mapped) ::munmap(p, mapped);
    else std::free(p);
  }
};
using ChunkMemory = std::unique_ptr<uint8_t[], FreeBytes>;

// Memory for chunk bytes, uninitialized. Blocks of 2 MiB or more start on
// a 2 MiB boundary and ask for transparent huge pages: a process that
// reads fills its chunk buffers once, and a 2 MiB page costs one fault
// where 4 KiB pages cost 512. Where huge pages are off or unavailable the
// advice is ignored and nothing else changes.
// ChunkMemorySize(n) is how many bytes AllocateChunkMemory(n) provides:
// n, or n rounded up to whole 2 MiB pages.
inline constexpr size_t kChunkHugePage = size_t{2} << 20;
inline size_t ChunkMemorySize(size_t n) {
  return n >= kChunkHugePage ? (n + kChunkHugePage - 1) & ~(kChunkHugePage - 1) : n;
}
inline ChunkMemory AllocateChunkMemory(size_t n) {
  constexpr size_t kHuge = kChunkHugePage;
  void* p;
  if (n >= kHuge) {
    const size_t whole = ChunkMemorySize(n);
    p = std::aligned_alloc(kHuge, whole);
    if (p) ::madvise(p, whole, MADV_HUGEPAGE);
  } else {
    p = std::malloc(n ? n : 1);
  }
  if (!p) throw std::bad_alloc();
  return ChunkMemory(static_cast<uint8_t*>(p));
}

// A std::allocator that takes its blocks from AllocateChunkMemory: for the
// large arrays a process builds once and fills at once (a tree walk's tens
// of thousands of entries), where 4 KiB page faults would be most of the
// cost of filling them.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
    return reinterpret_cast<T*>(AllocateChunkMemory(n * sizeof(T)).release());
  }
  void deallocate(T* p, size_t) { std::free(p); }
  template <typename U>
  bool operator==(const HugePageAllocator<U>&) const { return true; }
  template <typename U>
  bool operator!=(const HugePageAllocator<U>&) const { return false; }
};
template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { Resize(n); }
  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // Contents are not preserved when the buffer grows. `reserve` asks for
  // room beyond n, so that later, slightly larger sizes fit too. The
  // capacity is all the memory allocated: a block of whole huge pages
  // counts its rounding, so a later chunk that fits in it does not cost a
  // new block (and a new round of page faults).
  void Resize(size_t n, size_t reserve = 0) {
    if (n > capacity_) {
      const size_t want = ChunkMemorySize(reserve > n ? reserve : n);
      bytes_ = AllocateChunkMemory(want);
      capacity_ = want;
    }
    size_ = n;
  }
  // A copy of n bytes at p in memory of their own size (whole pages; no
  // huge-page rounding): for bytes kept long, where slack would be held as
  // long. Large ones are mapped with their pages present: faulting in
  // fresh memory a page at a time cost a third more than this. Where no
  // mapping can be had (the process's mapping limit), malloc as usual.
  static std::shared_ptr<Buffer> ExactCopy(const uint8_t* p, size_t n) {
    auto b = std::make_shared<Buffer>();
    constexpr size_t kMapAbove = 64 << 10;
    const size_t len = (n + 4095) & ~size_t{4095};
    void* mapped = n > kMapAbove ? ::mmap(nullptr, len, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0)
                                 : MAP_FAILED;
    if (mapped != MAP_FAILED) {
      b->bytes_ = ChunkMemory(static_cast<uint8_t*>(mapped), FreeBytes{len});
    } else {
      void* m = std::malloc(n ? n : 1);
      if (!m) throw std::bad_alloc();
      b->bytes_ = ChunkMemory(static_cast<uint8_t*>(m));
    }
    b->capacity_ = b->size_ = n;
    if (n) std::memcpy(b->bytes_.get(), p, n);
    return b;
  }

 private:
  ChunkMemory bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// ReaderStreambuf: refills a get area from a verifying Reader.
#include "chunkstore/object_stream.h"

namespace chunkstore {

ReaderStreambuf::ReaderStreambuf(std::unique_ptr<Reader> reader, size_t buffer_size)
    : reader_(std::move(reader)), buffer_(buffer_size ? buffer_size : 1) {
  setg(buffer_.data(), buffer_.data(), buffer_.data());
}

ReaderStreambuf::int_type ReaderStreambuf::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  buffer_start_ = reader_->Tell();
  Result<size_t> n = reader_->Read(buffer_.data(), buffer_.size());
  if (!n.ok()) {
    // End the input here; the owning stream (if any) gets badbit so the
    // failure cannot pass for a normal end of object.
    status_ = n.status();
    setg(buffer_.data(), buffer_.data(), buffer_.data());
    if (owner_ != nullptr) owner_->setstate(std::ios_base::badbit);
    return traits_type::eof();
  }
  setg(buffer_.data(), buffer_.data(), buffer_.data() + *n);
  if (*n == 0) return traits_type::eof();
  return traits_type::to_int_type(*gptr());
}

std::streamsize ReaderStreambuf::showmanyc() {
  const uint64_t pos = buffer_start_ + static_cast<uint64_t>(gptr() - eback());
  return static_cast<std::streamsize>(reader_->size() - std::min(pos, reader_->size()));
}

ReaderStreambuf::pos_type ReaderStreambuf::seekoff(off_type off, std::ios_base::seekdir dir,
                                                   std::ios_base::openmode which) {
  if (!(which & std::ios_base::in)) return pos_type(off_type(-1));
  const int64_t cur = static_cast<int64_t>(buffer_start_) + (gptr() - eback());
  int64_t target = off;
  if (dir == std::ios_base::cur) target = cur + off;
  else if (dir == std::ios_base::end) target = static_cast<int64_t>(reader_->size()) + off;
  return seekpos(pos_type(target), which);
}

ReaderStreambuf::pos_type ReaderStreambuf::seekpos(pos_type pos, std::ios_base::openmode which) {
  const off_type target = off_type(pos);
  if (!(which & std::ios_base::in) || target < 0 ||
      static_cast<uint64_t>(target) > reader_->size())
    return pos_type(off_type(-1));
  // Within the current buffer: just move the get pointer.
  const off_type rel = target - static_cast<off_type>(buffer_start_);
  if (rel >= 0 && rel <= egptr() - eback()) {
    setg(eback(), eback() + rel, egptr());
    return pos;
  }
  if (!reader_->Seek(static_cast<uint64_t>(target)).ok()) return pos_type(off_type(-1));
  buffer_start_ = static_cast<uint64_t>(target);
  setg(buffer_.data(), buffer_.data(), buffer_.data());
  return pos;
}

}  // namespace chunkstore

// SPDX-License-Identifier: Apache-2.0
// ObjectStream: a std::istream over a Reader, so existing code that reads
// streams can consume an object.
//
// Bytes come out verified, exactly as from Reader::Read. A read failure
// (corruption, I/O) ends the input and sets badbit, also when the bytes
// are taken through std::istreambuf_iterator; status() then says why.
// Nothing is thrown unless the caller enabled exceptions() on the stream.
// Seeking (seekg, tellg) is supported and moves the underlying reader.
//
// Thread safety: like any std::istream, use one from one thread at a time.
#pragma once

#include <istream>
#include <memory>
#include <streambuf>
#include <vector>

#include "chunkstore/status.h"
#include "chunkstore/store.h"

namespace chunkstore {

class ReaderStreambuf : public std::streambuf {
 public:
  // buffer_size: bytes fetched from the reader per refill (default 1 MiB).
  explicit ReaderStreambuf(std::unique_ptr<Reader> reader, size_t buffer_size = 1 << 20);
  const Status& status() const { return status_; }
  Reader& reader() { return *reader_; }
  // The stream that gets badbit when a read fails (ObjectStream sets it).
  void set_owner(std::istream* owner) { owner_ = owner; }

 protected:
  int_type underflow() override;
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override;
  pos_type seekpos(pos_type pos, std::ios_base::openmode which) override;
  std::streamsize showmanyc() override;

 private:
  std::unique_ptr<Reader> reader_;
  std::vector<char> buffer_;
  uint64_t buffer_start_ = 0;  // object offset of buffer_[0]
  Status status_;
  std::istream* owner_ = nullptr;
};

class ObjectStream : public std::istream {
 public:
  explicit ObjectStream(std::unique_ptr<Reader> reader)
      : std::istream(nullptr), buf_(std::move(reader)) {
    rdbuf(&buf_);
    buf_.set_owner(this);
  }
  // OK, or the error that ended reading.
  const Status& status() const { return buf_.status(); }
  uint64_t size() { return buf_.reader().size(); }

 private:
  ReaderStreambuf buf_;
};

}  // namespace chunkstore

// SPDX-License-Identifier: Apache-2.0
// Sources: where the bytes of an object being prepared or published come
// from (a file, a caller's buffer, a std::istream, a pull callback).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "chunkstore/status.h"

namespace chunkstore::internal {

class Source {
 public:
  virtual ~Source() = default;
  // Reads up to n bytes; 0 means the end. Short reads are allowed.
  virtual Result<size_t> Read(uint8_t* buf, size_t n) = 0;
  // The whole input, when it already sits in memory (no copy needed).
  virtual const uint8_t* Whole() const { return nullptr; }
  // The total size, when known in advance.
  virtual std::optional<uint64_t> Size() const { return std::nullopt; }
  // A name for error messages.
  virtual std::string Describe() const = 0;
  // Makes the next Read start at offset; false if this source cannot go
  // back (streams, callbacks).
  virtual bool Rewind(uint64_t offset) {
    (void)offset;
    return false;
  }
};

class BytesSource final : public Source {
 public:
  // what: the name in error messages (a file read ahead is still a file).
  BytesSource(const void* data, size_t n, std::string what = "byte buffer")
      : data_(static_cast<const uint8_t*>(data)), n_(n), what_(std::move(what)) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override;
  const uint8_t* Whole() const override { return data_; }
  std::optional<uint64_t> Size() const override { return n_; }
  std::string Describe() const override { return what_; }
  bool Rewind(uint64_t offset) override {
    if (offset > n_) return false;
    pos_ = static_cast<size_t>(offset);
    return true;
  }

 private:
  const uint8_t* data_;
  size_t n_;
  std::string what_;
  size_t pos_ = 0;
};

// Identity of a file's content as far as stat can tell: used to refuse to
// publish a prepared file that changed after it was prepared.
struct FileStamp {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

class FileSource final : public Source {
 public:
  // Opens path for reading; NotFound / IOError / InvalidArgument (directory,
  // not a regular file) with the path in the message.
  static Result<std::unique_ptr<FileSource>> Open(const std::string& path);
  ~FileSource() override;
  Result<size_t> Read(uint8_t* buf, size_t n) override;
  Result<size_t> ReadAt(uint64_t offset, uint8_t* buf, size_t n) const;
  std::optional<uint64_t> Size() const override { return stamp_.size; }
  std::string Describe() const override { return path_; }
  bool Rewind(uint64_t offset) override;
  const FileStamp& stamp() const { return stamp_; }
  Result<FileStamp> Restat() const;

 private:
  FileSource(int fd, std::string path, FileStamp stamp)
      : fd_(fd), path_(std::move(path)), stamp_(stamp) {}
  int fd_;
  std::string path_;
  FileStamp stamp_;
};

class StreamSource final : public Source {
 public:
  explicit StreamSource(std::istream& in) : in_(in) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override;
  std::string Describe() const override { return "input stream"; }

 private:
  std::istream& in_;
};

class PullSource final : public Source {
 public:
  using Pull = std::function<Result<size_t>(void*, size_t)>;
  explicit PullSource(Pull pull) : pull_(std::move(pull)) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override;
  std::string Describe() const override { return "the input stream"; }

 private:
  Pull pull_;
  bool ended_ = false;
};

}  // namespace chunkstore::internal

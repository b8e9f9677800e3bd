// SPDX-License-Identifier: Apache-2.0
// Status and Result: how every chunkstore call reports failure.
//
// The library does not throw. Every call that can fail returns a Status, or a
// Result<T> that holds either a value or a non-OK Status. A Status carries a
// Code that callers branch on, a one-line message for people, and, for
// Corruption, the ids of the object and chunk that failed verification.
//
// Thread safety: Status and Result are plain values; distinct objects may be
// used from distinct threads, and const access to one object is safe.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace chunkstore {

enum class Code {
  kOk = 0,
  kNotFound,         // no such object, name, chunk or store
  kCorruption,       // stored bytes or metadata failed verification
  kInvalidArgument,  // the caller passed something malformed or out of range
  kIOError,          // the operating system refused or failed an operation
  kBusy,             // another thread or process holds what is needed
  kUnsupported,      // e.g. a store written by a newer format version
  kPermissionDenied, // the storage service refused the credentials or access
  kNoSpace,          // the disk (or the user's quota) is full; nothing was changed
};

// A one-word name for a code ("not found", "corruption", ...).
const char* CodeName(Code code);

class Status {
 public:
  Status() = default;  // OK

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(Code::kInvalidArgument, std::move(msg));
  }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }
  static Status Busy(std::string msg) { return Status(Code::kBusy, std::move(msg)); }
  static Status Unsupported(std::string msg) { return Status(Code::kUnsupported, std::move(msg)); }
  static Status PermissionDenied(std::string msg) {
    return Status(Code::kPermissionDenied, std::move(msg));
  }
  static Status NoSpace(std::string msg) { return Status(Code::kNoSpace, std::move(msg)); }
  // object_id is "sha256:<hex>" (may be empty when unknown); chunk_id is hex.
  static Status Corruption(std::string msg, std::string object_id = {},
                           std::string chunk_id = {}) {
    Status s(Code::kCorruption, std::move(msg));
    s.object_id_ = std::move(object_id);
    s.chunk_id_ = std::move(chunk_id);
    return s;
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsUnsupported() const { return code_ == Code::kUnsupported; }
  bool IsPermissionDenied() const { return code_ == Code::kPermissionDenied; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }

  const std::string& message() const { return message_; }
  const std::string& object_id() const { return object_id_; }
  const std::string& chunk_id() const { return chunk_id_; }

  // Returns a copy whose message is "<context>: <message>".
  Status WithContext(const std::string& context) const;
  // Returns a copy with the object id filled in (Corruption errors found
  // below the object level learn the object id on the way up).
  Status WithObject(std::string object_id) const;

  // "<code name>: <message>" for logs; "OK" when ok().
  std::string ToString() const;

 private:
  Status(Code code, std::string msg) : code_(code), message_(std::move(msg)) {}

  Code code_ = Code::kOk;
  std::string message_;
  std::string object_id_;
  std::string chunk_id_;
};

namespace internal {
// Prints "chunkstore: value of a failed Result: <status>" to stderr and
// aborts: what taking the value of an error does in every build.
[[noreturn]] void AbortOnErrorValue(const Status& status);
}  // namespace internal

// Either a T or a non-OK Status. Constructing a Result from an OK Status is a
// programming error (asserted in debug builds). Taking the value of an error
// (value(), *, ->) is one too: it aborts the process with the error's text,
// in every build, rather than hand out a value that is not there.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    if (!ok()) internal::AbortOnErrorValue(status_);
    return *value_;
  }
  const T& value() const& {
    if (!ok()) internal::AbortOnErrorValue(status_);
    return *value_;
  }
  T&& value() && {
    if (!ok()) internal::AbortOnErrorValue(status_);
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace chunkstore

// Internal convenience used across the library: return early on error.
#define CHUNKSTORE_RETURN_IF_ERROR(expr)          \
  do {                                            \
    ::chunkstore::Status _cs_status = (expr);     \
    if (!_cs_status.ok()) return _cs_status;      \
  } while (0)

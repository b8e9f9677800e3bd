// SPDX-License-Identifier: Apache-2.0
// Status formatting helpers.
#include "chunkstore/status.h"

#include <cstdio>
#include <cstdlib>

namespace chunkstore {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kNotFound: return "not found";
    case Code::kCorruption: return "corruption";
    case Code::kInvalidArgument: return "invalid argument";
    case Code::kIOError: return "I/O error";
    case Code::kBusy: return "busy";
    case Code::kUnsupported: return "unsupported";
    case Code::kPermissionDenied: return "permission denied";
    case Code::kNoSpace: return "no space";
  }
  return "unknown";
}

Status Status::WithContext(const std::string& context) const {
  if (ok()) return *this;
  Status s = *this;
  s.message_ = context + ": " + message_;
  return s;
}

Status Status::WithObject(std::string object_id) const {
  Status s = *this;
  if (s.object_id_.empty()) s.object_id_ = std::move(object_id);
  return s;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message_;
}

void internal::AbortOnErrorValue(const Status& status) {
  std::fprintf(stderr, "chunkstore: value of a failed Result: %s\n", status.ToString().c_str());
  std::abort();
}

}  // namespace chunkstore

// Output helpers for the chunkstore command: exit codes, error lines,
// human-readable sizes and times, and a minimal JSON writer.
#pragma once

#include <cstdint>
#include <string>

#include "chunkstore/status.h"

namespace cli {

enum Exit { kOk = 0, kFailure = 1, kUsage = 2, kNotFound = 3, kIntegrity = 4, kDenied = 5 };

// The exit code for a library error: NotFound 3, Corruption 4,
// InvalidArgument 2, PermissionDenied 5, anything else 1.
int ExitFor(const chunkstore::Status& s);
// Prints "chunkstore: <message>" on stderr and returns code.
int Fail(const chunkstore::Status& s, int code);
inline int Fail(const chunkstore::Status& s) { return Fail(s, ExitFor(s)); }

// "1.5 MiB", "512 B".
std::string HumanSize(uint64_t bytes);
// "2026-11-30 11:22:33 UTC".
std::string HumanTime(int64_t unix_seconds);
// "2026-11-30T11:22:33Z".
std::string IsoTime(int64_t unix_seconds);

// Builds one JSON value. Keys and values are appended in call order; the
// writer inserts commas. Strings are escaped (control characters as \u00XX).
class Json {
 public:
  Json& BeginObject();
  Json& EndObject();
  Json& BeginArray();
  Json& EndArray();
  Json& Key(const std::string& k);
  Json& Str(const std::string& v);
  Json& Num(uint64_t v);
  Json& Int(int64_t v);
  Json& Real(double v);
  Json& Bool(bool v);
  const std::string& str() const { return out_; }

 private:
  void Sep();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace cli

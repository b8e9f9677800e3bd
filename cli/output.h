// SPDX-License-Identifier: Apache-2.0
// Output helpers for the chunkstore command: exit codes, error lines,
// human-readable sizes and times, and a JSON builder.
#pragma once

#include <cstdint>
#include <memory>
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

// text with its control characters (C0, DEL, C1) written as \n, \r, \t,
// \xNN or \uNNNN, and every byte that is not part of well-formed UTF-8
// as \xNN, so a file name or a server's reply cannot break a line of
// output or drive the terminal. Every message and path printed as text
// goes through it; JSON output escapes on its own.
std::string Printable(const std::string& text);

// Records a failed write to stdout (call after flushing it).
void CheckOutput();
// The exit code once the command is done: code, or 1 if anything written
// to stdout failed (said on stderr, except for a closed pipe).
int FinishOutput(int code);

// "1.5 MiB", "512 B".
std::string HumanSize(uint64_t bytes);
// "2026-11-30 11:22:33 UTC".
std::string HumanTime(int64_t unix_seconds);
// "2026-11-30T11:22:33Z".
std::string IsoTime(int64_t unix_seconds);

// Builds one JSON value (with nlohmann::json, which escapes strings and
// formats numbers). Keys and values are added in call order and keep it.
// Bytes that are not UTF-8 (a file name) come out as U+FFFD.
class Json {
 public:
  Json();
  ~Json();
  Json& BeginObject();
  Json& EndObject();
  Json& BeginArray();
  Json& EndArray();
  Json& Key(const std::string& k);
  Json& Str(const std::string& v);
  Json& Num(uint64_t v);
  Json& Int(int64_t v);
  Json& Real(double v);  // rounded to 4 decimals
  Json& Bool(bool v);
  // The value built so far, on one line.
  std::string str() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cli

// Output helpers (see output.h).
#include "output.h"

#include <cstdio>
#include <ctime>
#include <iostream>

namespace cli {

int ExitFor(const chunkstore::Status& s) {
  using chunkstore::Code;
  switch (s.code()) {
    case Code::kOk: return kOk;
    case Code::kNotFound: return kNotFound;
    case Code::kCorruption: return kIntegrity;
    case Code::kInvalidArgument: return kUsage;
    case Code::kPermissionDenied: return kDenied;
    default: return kFailure;
  }
}

int Fail(const chunkstore::Status& s, int code) {
  std::cerr << "chunkstore: " << s.message() << "\n";
  return code;
}

std::string HumanSize(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, kUnits[u]);
  return buf;
}

static std::string FormatTime(int64_t t, const char* fmt) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, fmt, &tm);
  return buf;
}

std::string HumanTime(int64_t t) { return FormatTime(t, "%Y-%m-%d %H:%M:%S UTC"); }
std::string IsoTime(int64_t t) { return FormatTime(t, "%Y-%m-%dT%H:%M:%SZ"); }

void Json::Sep() {
  if (need_comma_) out_ += ',';
  need_comma_ = true;
}
Json& Json::BeginObject() {
  Sep();
  out_ += '{';
  need_comma_ = false;
  return *this;
}
Json& Json::EndObject() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}
Json& Json::BeginArray() {
  Sep();
  out_ += '[';
  need_comma_ = false;
  return *this;
}
Json& Json::EndArray() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}
Json& Json::Key(const std::string& k) {
  Str(k);
  out_ += ':';
  need_comma_ = false;
  return *this;
}
Json& Json::Str(const std::string& v) {
  Sep();
  out_ += '"';
  for (unsigned char c : v) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\t': out_ += "\\t"; break;
      case '\r': out_ += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out_ += buf;
        } else {
          out_ += static_cast<char>(c);
        }
    }
  }
  out_ += '"';
  return *this;
}
Json& Json::Num(uint64_t v) {
  Sep();
  out_ += std::to_string(v);
  return *this;
}
Json& Json::Int(int64_t v) {
  Sep();
  out_ += std::to_string(v);
  return *this;
}
Json& Json::Real(double v) {
  Sep();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  out_ += buf;
  return *this;
}
Json& Json::Bool(bool v) {
  Sep();
  out_ += v ? "true" : "false";
  return *this;
}

}  // namespace cli

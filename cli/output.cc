// SPDX-License-Identifier: Apache-2.0
// Output helpers (see output.h).
#include "output.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

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
  std::cerr << "chunkstore: " << Printable(s.message()) << "\n";
  return code;
}

namespace {

// The length of the well-formed UTF-8 sequence that starts at s[i] (1 to
// 4 bytes), or 0 where none does: a stray continuation byte, a truncated
// or overlong sequence, a surrogate, or a code point past U+10FFFF.
size_t Utf8SequenceAt(const std::string& s, size_t i) {
  const auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  const auto cont = [&](size_t k) { return at(k) >= 0x80 && at(k) <= 0xbf; };
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    const unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    return at(1) >= lo && at(1) <= hi && cont(2) ? 3 : 0;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    const unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    return at(1) >= lo && at(1) <= hi && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  char buf[8];
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
      }
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceAt(text, i);
    if (n == 0) {
      // Not UTF-8: a terminal in an 8-bit mode could take a lone 0x9b
      // for a control sequence, and no reader can tell what it was.
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      // C1 controls, U+0080 to U+009F.
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      i += 2;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

namespace {
int g_output_errno = 0;  // the first failed write to stdout
}

void CheckOutput() {
  if (g_output_errno == 0 && !std::cout.good()) g_output_errno = errno != 0 ? errno : EIO;
}

int FinishOutput(int code) {
  errno = 0;
  std::cout.flush();
  CheckOutput();
  if (g_output_errno == 0) return code;
  // A reader that went away (`| head`) wants no message, only the failure.
  if (g_output_errno != EPIPE)
    std::cerr << "chunkstore: cannot write output: " << std::strerror(g_output_errno) << "\n";
  return code == kOk ? static_cast<int>(kFailure) : code;
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

struct Json::Impl {
  using Value = nlohmann::ordered_json;
  struct Open {
    Value value;
    std::string key;  // under which it goes into its parent
  };
  std::vector<Open> open;
  std::string key;
  Value root;

  Json& Put(Json& self, Value v) {
    if (open.empty()) root = std::move(v);
    else if (open.back().value.is_object()) open.back().value[key] = std::move(v);
    else open.back().value.push_back(std::move(v));
    key.clear();
    return self;
  }
  Json& Begin(Json& self, Value v) {
    open.push_back({std::move(v), std::move(key)});
    key.clear();
    return self;
  }
  Json& End(Json& self) {
    Open o = std::move(open.back());
    open.pop_back();
    key = std::move(o.key);
    return Put(self, std::move(o.value));
  }
};

Json::Json() : impl_(std::make_unique<Impl>()) {}
Json::~Json() = default;
Json& Json::BeginObject() { return impl_->Begin(*this, Impl::Value::object()); }
Json& Json::EndObject() { return impl_->End(*this); }
Json& Json::BeginArray() { return impl_->Begin(*this, Impl::Value::array()); }
Json& Json::EndArray() { return impl_->End(*this); }
Json& Json::Key(const std::string& k) {
  impl_->key = k;
  return *this;
}
Json& Json::Str(const std::string& v) { return impl_->Put(*this, v); }
Json& Json::Num(uint64_t v) { return impl_->Put(*this, v); }
Json& Json::Int(int64_t v) { return impl_->Put(*this, v); }
Json& Json::Real(double v) { return impl_->Put(*this, std::round(v * 1e4) / 1e4); }
Json& Json::Bool(bool v) { return impl_->Put(*this, v); }
std::string Json::str() const {
  return impl_->root.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace cli

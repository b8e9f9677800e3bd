// Output helpers (see output.h).
#include "output.h"

#include <cmath>
#include <cstdio>
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

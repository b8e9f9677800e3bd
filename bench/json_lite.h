// A small JSON parser: enough for tests to check the CLI's --json output
// and for the benchmark tool to read an earlier run for --compare.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace chunkstore::jsonlite {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<JsonValue> arr;
  std::map<std::string, JsonValue> obj;

  const JsonValue& operator[](const std::string& k) const {
    auto it = obj.find(k);
    if (kind != kObject || it == obj.end()) throw std::runtime_error("no key " + k);
    return it->second;
  }
  const JsonValue& operator[](size_t i) const {
    if (kind != kArray || i >= arr.size()) throw std::runtime_error("bad index");
    return arr[i];
  }
  bool has(const std::string& k) const { return kind == kObject && obj.count(k); }
  uint64_t u64() const { return static_cast<uint64_t>(num); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  // Throws std::runtime_error on anything malformed or trailing.
  JsonValue ParseDocument() {
    JsonValue v = Value();
    Ws();
    if (i_ != s_.size()) throw std::runtime_error("trailing characters at " + std::to_string(i_));
    return v;
  }

 private:
  void Ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  char Peek() {
    Ws();
    if (i_ >= s_.size()) throw std::runtime_error("unexpected end");
    return s_[i_];
  }
  void Expect(char c) {
    if (Peek() != c) throw std::runtime_error(std::string("expected ") + c + " at " + std::to_string(i_));
    ++i_;
  }
  JsonValue Value() {
    const char c = Peek();
    JsonValue v;
    if (c == '{') {
      v.kind = JsonValue::kObject;
      ++i_;
      if (Peek() == '}') { ++i_; return v; }
      for (;;) {
        std::string k = String();
        Expect(':');
        v.obj[k] = Value();
        if (Peek() == ',') { ++i_; continue; }
        Expect('}');
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonValue::kArray;
      ++i_;
      if (Peek() == ']') { ++i_; return v; }
      for (;;) {
        v.arr.push_back(Value());
        if (Peek() == ',') { ++i_; continue; }
        Expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonValue::kString;
      v.str = String();
      return v;
    }
    if (s_.compare(i_, 4, "true") == 0) { i_ += 4; v.kind = JsonValue::kBool; v.b = true; return v; }
    if (s_.compare(i_, 5, "false") == 0) { i_ += 5; v.kind = JsonValue::kBool; return v; }
    if (s_.compare(i_, 4, "null") == 0) { i_ += 4; return v; }
    char* end = nullptr;
    v.num = std::strtod(s_.c_str() + i_, &end);
    if (end == s_.c_str() + i_) throw std::runtime_error("bad value at " + std::to_string(i_));
    i_ = static_cast<size_t>(end - s_.c_str());
    v.kind = JsonValue::kNumber;
    return v;
  }
  std::string String() {
    Expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) throw std::runtime_error("raw control character in string");
      if (c == '\\') {
        if (i_ >= s_.size()) break;
        const char e = s_[i_++];
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'u': out += static_cast<char>(std::strtol(s_.substr(i_, 4).c_str(), nullptr, 16)); i_ += 4; break;
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    Expect('"');
    return out;
  }
  const std::string& s_;
  size_t i_ = 0;
};

inline JsonValue ParseJson(const std::string& s) { return JsonParser(s).ParseDocument(); }

}  // namespace chunkstore::jsonlite

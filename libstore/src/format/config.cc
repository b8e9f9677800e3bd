// SPDX-License-Identifier: Apache-2.0
// Store configs (config.h): encoding and a strict decoder.
#include "format/config.h"

#include <cstdio>
#include <cstdlib>

#include "hash/digest.h"

namespace chunkstore::internal {

namespace {

constexpr const char* kDirectoryHeader = "chunkstore store";
constexpr const char* kBucketHeader = "chunkstore bucket store";

}  // namespace

std::string EncodeConfig(const StoreConfig& c) {
  const ChunkerParams& p = c.meta.chunking;
  std::string s = std::string(c.bucket ? kBucketHeader : kDirectoryHeader) + "\n";
  s += "format " + std::to_string(c.format) + "\n";
  s += "id " + c.id + "\n";
  s += "chunk_min " + std::to_string(p.min_size) + "\n";
  s += "chunk_avg " + std::to_string(p.avg_size) + "\n";
  s += "chunk_max " + std::to_string(p.max_size) + "\n";
  s += "chunk_level " + std::to_string(p.level) + "\n";
  s += "compression " + CompressionText(c.meta.compression) + "\n";
  if (!c.bucket || c.format >= 2) s += "inline_max " + std::to_string(c.meta.inline_max) + "\n";
  if (c.sequenced) s += "log sequenced\n";
  if (!c.secret_check.empty()) s += "secret_check " + c.secret_check + "\n";
  if (!c.bucket || c.format >= 2) {
    char check[32];
    std::snprintf(check, sizeof check, "%016llx", static_cast<unsigned long long>(XxHash64(s.data(), s.size())));
    s += std::string("check ") + check + "\n";
  }
  return s;
}

Result<StoreConfig> DecodeConfig(const std::string& text, const std::string& where) {
  StoreConfig c;
  const size_t nl = text.find('\n');
  const std::string head = text.substr(0, nl);
  if (head == kBucketHeader) c.bucket = true;
  else if (head != kDirectoryHeader)
    return Status::InvalidArgument(where + " is not a chunkstore store's config");
  bool have_min = false, have_avg = false, have_max = false, have_check = false;
  // Reported only once the check line has vouched for the text: a damaged
  // line is damage, not a newer version's codec.
  std::string unknown_compression;
  for (size_t pos = nl == std::string::npos ? text.size() : nl + 1; pos < text.size();) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    if (line.empty()) continue;
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) return Status::Corruption(where + " has a malformed line");
    const std::string k = line.substr(0, sp), v = line.substr(sp + 1);
    if (have_check && k != "hmac") return Status::Corruption(where + " has lines after its check");
    char* rest = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &rest, 10);
    const bool numeric = !v.empty() && rest && *rest == '\0' && n <= 0xffffffffull;
    auto need_number = [&]() -> Status {
      return numeric ? Status::OK() : Status::Corruption(where + ": " + k + " is not a number");
    };
    if (k == "format") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.format = static_cast<int>(n);
    } else if (k == "id") {
      if (v.size() != 32 || v.find_first_not_of("0123456789abcdef") != std::string::npos)
        return Status::Corruption(where + " has a malformed store id");
      c.id = v;
    } else if (k == "chunk_min") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.meta.chunking.min_size = static_cast<uint32_t>(n);
      have_min = true;
    } else if (k == "chunk_avg") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.meta.chunking.avg_size = static_cast<uint32_t>(n);
      have_avg = true;
    } else if (k == "chunk_max") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.meta.chunking.max_size = static_cast<uint32_t>(n);
      have_max = true;
    } else if (k == "chunk_level") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.meta.chunking.level = static_cast<int>(n);
    } else if (k == "compression") {
      Result<Compression> parsed = Compression::Parse(v);
      if (parsed.ok()) c.meta.compression = *parsed;
      else unknown_compression = v.substr(0, 32);
    } else if (k == "inline_max") {
      CHUNKSTORE_RETURN_IF_ERROR(need_number());
      c.meta.inline_max = static_cast<uint32_t>(n);
    } else if (k == "log") {
      if (v != "sequenced") return Status::Corruption(where + ": log " + v.substr(0, 32) + " is not a log kind");
      c.sequenced = true;
    } else if (k == "secret_check") {
      c.secret_check = v;
    } else if (k == "check") {
      // Everything before this line; what follows it (a bucket's hmac) is
      // not covered.
      const size_t line_start = pos - line.size() - (end == std::string::npos ? 0 : 1);
      char want[32];
      std::snprintf(want, sizeof want, "%016llx",
                    static_cast<unsigned long long>(XxHash64(text.data(), line_start)));
      if (v != want) return Status::Corruption(where + " fails its check (damaged)");
      have_check = true;
    }
    // Other keys are left to newer versions, which bump the format for
    // anything an older reader must not ignore.
  }
  const int newest = c.bucket ? kBucketFormat : kDirectoryFormat;
  if (c.format < 1 || c.format > newest)
    return Status::Unsupported(where + " is " + (c.bucket ? "bucket store" : "store") + " format " +
                               std::to_string(c.format) + "; this chunkstore reads formats up to " +
                               std::to_string(newest));
  if (c.id.empty()) return Status::Corruption(where + " has no store id");
  if (c.sequenced != (c.bucket && c.format >= kBucketSequencedFormat))
    return Status::Corruption(where + (c.sequenced ? " says its log is sequenced, which its format is not"
                                                   : " lacks the kind of log its format has"));
  if (!have_check && (!c.bucket || c.format >= 2)) return Status::Corruption(where + " has no check line (damaged)");
  if (!unknown_compression.empty())
    return Status::Unsupported(where + ": unknown compression " + unknown_compression +
                               " (written by a newer chunkstore?)");
  if (!have_min || !have_avg || !have_max) return Status::Corruption(where + " lacks the chunk sizes");
  CHUNKSTORE_RETURN_IF_ERROR(c.meta.chunking.Validate().WithContext(where));
  return c;
}

std::string SecretCheck(const std::string& secret) {
  static const char kText[] = "chunkstore store secret check";
  return HmacSha256(secret, kText, sizeof kText - 1).Hex();
}

}  // namespace chunkstore::internal

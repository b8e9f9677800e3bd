// SPDX-License-Identifier: Apache-2.0
// Names: what a catalog name may be (store.h, ValidateName), and the names
// of the files and keys a store writes (layout.h).
#include <cstdio>

#include "chunkstore/store.h"
#include "format/layout.h"
#include "hash/digest.h"

namespace chunkstore {

Status ValidateName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("a name cannot be empty");
  if (name.size() > 1024)
    return Status::InvalidArgument("name is " + std::to_string(name.size()) +
                                   " bytes long; the limit is 1024");
  // Well-formed UTF-8 without control characters (C0, DEL or C1).
  const size_t n = name.size();
  for (size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(name[i]);
    const auto bad_utf8 = [&] {
      return Status::InvalidArgument("name is not valid UTF-8 (byte " + std::to_string(i) + ")");
    };
    if (c < 0x20 || c == 0x7f)
      return Status::InvalidArgument("name contains a control character at byte " +
                                     std::to_string(i));
    size_t extra;
    if (c < 0x80) extra = 0;
    else if (c >= 0xc2 && c <= 0xdf) extra = 1;
    else if ((c & 0xf0) == 0xe0) extra = 2;
    else if (c >= 0xf0 && c <= 0xf4) extra = 3;
    else return bad_utf8();
    if (i + extra >= n && extra > 0) return bad_utf8();
    for (size_t k = 1; k <= extra; ++k)
      if ((static_cast<unsigned char>(name[i + k]) & 0xc0) != 0x80) return bad_utf8();
    // Overlong forms, UTF-16 surrogates (U+D800-DFFF) and code points past
    // U+10FFFF are not UTF-8, though their bytes have the right shape.
    const auto next = extra ? static_cast<unsigned char>(name[i + 1]) : 0;
    if ((c == 0xe0 && next < 0xa0) || (c == 0xed && next > 0x9f) || (c == 0xf0 && next < 0x90) ||
        (c == 0xf4 && next > 0x8f))
      return bad_utf8();
    if (c == 0xc2 && static_cast<unsigned char>(name[i + 1]) < 0xa0)
      return Status::InvalidArgument("name contains a control character at byte " +
                                     std::to_string(i));
    i += extra + 1;
  }
  return Status::OK();
}

namespace internal {

bool IsPackName(const std::string& name) {
  constexpr size_t kLen = 5 + 16 + 5;  // "pack-" hex ".pack"
  if (name.size() != kLen || name.compare(0, 5, "pack-") != 0 || name.compare(21, 5, ".pack") != 0) return false;
  for (size_t i = 5; i < 21; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
  return true;
}

std::string NewPackName() { return "pack-" + RandomHex(8) + ".pack"; }

}  // namespace internal

}  // namespace chunkstore

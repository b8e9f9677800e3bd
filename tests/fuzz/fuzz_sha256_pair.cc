// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: Sha256Pair gives OpenSSL's digest for both messages,
// and a Sha256Stream over the whole input, fed in two pieces, gives
// OpenSSL's digest while taking the second message along
// (UpdateAlongside). The first four bytes choose where in the rest each
// message starts and how long it is, so the pairs cover unequal,
// overlapping and unaligned messages of every length up to the input's.
#include <openssl/evp.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "hash/sha256_pair.h"

namespace {

chunkstore::internal::Digest OpenSsl(const uint8_t* p, size_t n) {
  chunkstore::internal::Digest d;
  unsigned len = 0;
  if (EVP_Digest(p, n, d.bytes.data(), &len, EVP_sha256(), nullptr) != 1) std::abort();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const uint8_t* in = data + 4;
  const size_t n = size - 4;
  const size_t a_off = n ? data[0] % (n + 1) : 0, b_off = n ? data[1] % (n + 1) : 0;
  // Lengths: all of the rest from the start, or a share of it chosen by
  // the byte, so both long and short messages occur.
  const size_t a_len = data[2] & 1 ? n - a_off : (n - a_off) * (data[2] >> 1) / 127;
  const size_t b_len = data[3] & 1 ? n - b_off : (n - b_off) * (data[3] >> 1) / 127;
  chunkstore::internal::Digest da, db;
  chunkstore::internal::Sha256Pair(in + a_off, a_len, &da, in + b_off, b_len, &db);
  if (da != OpenSsl(in + a_off, a_len) || db != OpenSsl(in + b_off, b_len)) std::abort();

  chunkstore::internal::Sha256Stream stream;
  chunkstore::internal::Sha256Partial other;
  other.Start(in + b_off, b_len);
  bool open = true;
  const size_t pieces[2][2] = {{0, a_off}, {a_off, n}};  // split where a starts
  for (const auto& piece : pieces) {
    const uint8_t* p = in + piece[0];
    size_t left = piece[1] - piece[0];
    while (left > 0 && open) {
      const size_t used = stream.UpdateAlongside(p, left, other);
      if (used > left) std::abort();
      p += used;
      left -= used;
      if (!other.HasBlocks()) {
        if (other.Finish() != db) std::abort();
        open = false;
      }
    }
    stream.Update(p, left);
  }
  if (open && other.Finish() != db) std::abort();
  if (stream.Finish() != OpenSsl(in, n)) std::abort();
  return 0;
}

// SPDX-License-Identifier: Apache-2.0
// Publishes bytes into an in-memory store and reads them back through the
// std::istream adapter; exits 0 only if every byte matches.
#include <chunkstore/blob_store.h>
#include <chunkstore/object_stream.h>
#include <chunkstore/store.h>
#include <chunkstore/version.h>

#include <stdlib.h>

#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>

namespace {

// Publishes and reads back through a store whose local cache is `cache`;
// every handle is closed when it returns, so the caller can remove it.
bool ReadBackThroughBucket(const char* cache, const chunkstore::Options& o, const std::string& payload) {
  auto bucket = chunkstore::Store::Open(cache, o);
  if (!bucket.ok()) return false;
  if (!(*bucket)->PublishBytes(payload.data(), payload.size(), "b").ok()) return false;
  auto r = (*bucket)->OpenReader("b");
  if (!r.ok()) return false;
  std::string again(payload.size(), '\0');
  auto got = (*r)->ReadAt(0, again.data(), again.size());
  return got.ok() && again == payload;
}

}  // namespace

int main() {
  auto store = chunkstore::Store::OpenInMemory();
  if (!store.ok()) return 1;
  std::string payload;
  for (int i = 0; i < 100000; ++i) payload += std::to_string(i);
  auto pub = (*store)->PublishBytes(payload.data(), payload.size(), "consumer/test");
  if (!pub.ok()) return 1;
  auto reader = (*store)->OpenReader("consumer/test");
  if (!reader.ok()) return 1;
  chunkstore::ObjectStream in(std::move(*reader));
  const std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::cout << "chunkstore " << chunkstore::Version() << ": " << pub->id << " "
            << (back == payload ? "matches" : "DIFFERS") << "\n";
  if (back != payload || !in.status().ok()) return 1;

  // The same through a bucket store kept in an in-memory blob store.
  auto blobs = chunkstore::NewMemoryBlobStore();
  chunkstore::Options o;
  o.blob_store = blobs.get();
  char cache[] = "/tmp/chunkstore-consumer-XXXXXX";
  if (!mkdtemp(cache)) return 1;
  const bool same = ReadBackThroughBucket(cache, o, payload);
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  std::cout << "bucket store: " << (same ? "matches" : "DIFFERS") << "\n";
  return same ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0
// Publishes bytes into an in-memory store and reads them back through the
// std::istream adapter; exits 0 only if every byte matches.
#include <chunkstore/blob_store.h>
#include <chunkstore/object_stream.h>
#include <chunkstore/store.h>
#include <chunkstore/version.h>

#include <stdlib.h>

#include <iostream>
#include <iterator>
#include <string>

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
  auto bucket = chunkstore::Store::Open(cache, o);
  if (!bucket.ok()) return 1;
  if (!(*bucket)->PublishBytes(payload.data(), payload.size(), "b").ok()) return 1;
  auto r = (*bucket)->OpenReader("b");
  if (!r.ok()) return 1;
  std::string again(payload.size(), '\0');
  auto got = (*r)->ReadAt(0, again.data(), again.size());
  std::cout << "bucket store: " << (got.ok() && again == payload ? "matches" : "DIFFERS") << "\n";
  return got.ok() && again == payload ? 0 : 1;
}

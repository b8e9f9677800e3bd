// Publishes bytes into an in-memory store and reads them back through the
// std::istream adapter; exits 0 only if every byte matches.
#include <chunkstore/object_stream.h>
#include <chunkstore/store.h>
#include <chunkstore/version.h>

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
  return back == payload && in.status().ok() ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0
// Where Store::CopyTo writes (copy.cc): a publish session on a store this
// process opened, or push streams (format/push_format.h) to a server that
// serves the destination over HTTP and checks each whole push itself
// (Store::Receive) before it commits it.
//
// Thread safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format/manifest.h"
#include "ingest/source.h"
#include "store/store_impl.h"
#include "write/publish_session.h"

namespace chunkstore::internal {

class CopySink {
 public:
  virtual ~CopySink() = default;
  // Whether a commit of this copy already sent chunk id (which the
  // destination's own index may not show yet).
  virtual bool Sent(const Digest& id) const = 0;
  // An object about to be named (a tree's member, a name's version): added
  // since the last commit, sent by an earlier one, or at the destination.
  virtual Status Named(const Digest& id) = 0;
  // A verified chunk; returns whether it was sent (not held already).
  virtual Result<bool> AddChunk(const Digest& id, const uint8_t* raw, uint32_t length) = 0;
  // A one-chunk object whose whole content (checked against id) is given.
  virtual Status AddWhole(const Digest& id, const std::string& content, const ObjectRole& role) = 0;
  // An object read whole from source (size bytes) and cut as the
  // destination cuts. Fills in chunks written and reused where known.
  virtual Status AddSource(const Digest& id, uint64_t size, Source& source, const ObjectRole& role,
                           uint64_t* chunks_written, uint64_t* chunks_reused) = 0;
  // An object whose chunks were all added or are at the destination.
  virtual Status AddObject(const Digest& id, uint64_t size, const Manifest& manifest, const ObjectRole& role) = 0;
  virtual Status AddNameVersion(const std::string& name, const Digest& object, int64_t created) = 0;
  // Bytes added since the last commit.
  virtual uint64_t pending_bytes() const = 0;
  // Commits what was added since the last commit; *committed says whether
  // there was anything.
  virtual Status Commit(bool* committed) = 0;
  // Requests this sink made itself (pushes), beyond its store's own.
  virtual uint64_t requests() const { return 0; }
};

// Publish sessions on dst, one per commit.
std::unique_ptr<CopySink> NewSessionSink(Store::Impl* dst);
// Push streams to dst->push_url, with the bearer token dst->options.http_token;
// the stream waits in a temporary file until its commit.
std::unique_ptr<CopySink> NewPushSink(Store::Impl* dst);

}  // namespace chunkstore::internal

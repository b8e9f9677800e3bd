// SPDX-License-Identifier: Apache-2.0
// The /blobs part of `serve`: the store as a read-only S3 bucket
// (Store::OpenBlobView), in the subset of the S3 API that chunkstore's own
// client speaks, so that another machine opens http://HOST:PORT as a
// bucket store with a cache of its own and verifies what it reads there.
//
//   HEAD /blobs                         200 (the bucket exists)
//   GET  /blobs?list-type=2&prefix=P    ListObjectsV2, 1000 keys a page,
//        [&start-after=K|&continuation-token=T]
//   GET  /blobs?uploads                 ListMultipartUploads (always empty)
//   GET  /blobs/<key>, HEAD             a blob; one byte range gives 206
//   anything else that writes           403 AccessDenied
//
// Answers are plain values: serve.cc turns them into responses, streaming
// a blob's bytes from the view.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "chunkstore/blob_store.h"

namespace cli {

struct BlobAnswer {
  unsigned status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent as it is, unless stream
  // The body is bytes [offset, offset + length) of the blob key.
  bool stream = false;
  std::string key;
  uint64_t offset = 0, length = 0;
};

// path: what follows "/blobs" in the request's (decoded) path. arg looks up
// a query argument (nullptr when absent); range is the Range header or
// nullptr.
BlobAnswer AnswerBlobRequest(chunkstore::BlobStore& view, const std::string& method, const std::string& path,
                             const std::function<const char*(const char*)>& arg, const char* range);

// The S3 error answer for a request that would write.
BlobAnswer RefuseBlobWrite(const std::string& path);

}  // namespace cli

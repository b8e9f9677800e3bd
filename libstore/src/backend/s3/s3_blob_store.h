// SPDX-License-Identifier: Apache-2.0
// The S3 implementation of BlobStore: libcurl for HTTP, requests signed with
// AWS Signature Version 4 (sigv4.h), retries with backoff for timeouts,
// dropped connections and 5xx answers.
#pragma once

#include <memory>
#include <string>

#include "chunkstore/blob_store.h"
#include "chunkstore/options.h"

namespace chunkstore::internal {

struct S3Location {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'; may be empty
};

// Parses "s3://BUCKET[/PREFIX]". InvalidArgument says what is wrong.
Result<S3Location> ParseS3Url(const std::string& url);

// S3Options with empty fields filled from the environment; InvalidArgument
// when credentials are missing.
Result<S3Options> ResolveS3Options(const S3Options& given);

// A blob store over bucket/prefix. With create_bucket, a missing bucket is
// created on first use.
Result<std::unique_ptr<BlobStore>> NewS3BlobStore(const S3Location& where, const S3Options& opts,
                                                  bool create_bucket);

// Begins a multipart upload of key on an S3 blob store (one NewS3BlobStore
// made) and leaves it open, as a writer killed mid-upload would: for tests
// of what cleans such uploads up. Returns its upload id.
Result<std::string> StartUpload(BlobStore* s3, const std::string& key);

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// libcurl, loaded when an S3 store is first opened rather than at program
// start. Linked normally, libcurl and what it pulls in (TLS, Kerberos,
// LDAP, ...) add about 3.5 ms to the start of every process that links
// chunkstore, which every CLI command would pay whether or not it talks to
// S3.
//
// Thread safety: Curl() and LoadCurl() may be called from any thread; the
// table they return is immutable.
#ifndef CHUNKSTORE_CURL_API_H_
#define CHUNKSTORE_CURL_API_H_

#include <curl/curl.h>

#include <memory>

#include "chunkstore/status.h"

namespace chunkstore::internal {

// The libcurl functions the S3 client uses.
struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL* h);
  void (*easy_reset)(CURL* h);
  CURLcode (*easy_setopt)(CURL* h, CURLoption option, ...);
  CURLcode (*easy_perform)(CURL* h);
  CURLcode (*easy_getinfo)(CURL* h, CURLINFO info, ...);
  const char* (*easy_strerror)(CURLcode code);
  curl_slist* (*slist_append)(curl_slist* list, const char* s);
  void (*slist_free_all)(curl_slist* list);
};

// Loads the shared library `soname` (dlopen) and resolves every function;
// an error names the library and what failed. The library stays loaded.
Result<std::unique_ptr<CurlApi>> LoadCurl(const char* soname);

// libcurl.so.4, loaded (and curl_global_init run) on the first call; later
// calls return the same table, or the same error.
Result<const CurlApi*> Curl();

}  // namespace chunkstore::internal

#endif  // CHUNKSTORE_CURL_API_H_

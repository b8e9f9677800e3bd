// SPDX-License-Identifier: Apache-2.0
// Loading libcurl on demand (see curl_api.h).
#include "backend/s3/curl_api.h"

#include <dlfcn.h>

#include <memory>
#include <mutex>
#include <string>

namespace chunkstore::internal {

namespace {

// Sets *out to the function `name`, or adds the name to *missing.
template <typename Fn>
void Resolve(void* lib, const char* name, Fn* out, std::string* missing) {
  if (void* sym = dlsym(lib, name)) {
    *out = reinterpret_cast<Fn>(sym);
    return;
  }
  if (!missing->empty()) *missing += ", ";
  *missing += name;
}

}  // namespace

Result<std::unique_ptr<CurlApi>> LoadCurl(const char* soname) {
  // Never closed once loaded: curl handles live in thread-locals whose
  // destructors run at thread exit, possibly after any owner of ours.
  void* lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Status::Unsupported(std::string("S3 stores need libcurl, which cannot be loaded (") +
                               (why ? why : soname) + "); install the libcurl4 package");
  }
  auto api = std::make_unique<CurlApi>();
  std::string missing;
  Resolve(lib, "curl_global_init", &api->global_init, &missing);
  Resolve(lib, "curl_easy_init", &api->easy_init, &missing);
  Resolve(lib, "curl_easy_cleanup", &api->easy_cleanup, &missing);
  Resolve(lib, "curl_easy_reset", &api->easy_reset, &missing);
  Resolve(lib, "curl_easy_setopt", &api->easy_setopt, &missing);
  Resolve(lib, "curl_easy_perform", &api->easy_perform, &missing);
  Resolve(lib, "curl_easy_getinfo", &api->easy_getinfo, &missing);
  Resolve(lib, "curl_easy_strerror", &api->easy_strerror, &missing);
  Resolve(lib, "curl_slist_append", &api->slist_append, &missing);
  Resolve(lib, "curl_slist_free_all", &api->slist_free_all, &missing);
  if (!missing.empty()) {
    dlclose(lib);
    return Status::Unsupported(std::string(soname) + " lacks " + missing +
                               "; S3 stores need libcurl 7.x or later");
  }
  return api;
}

Result<const CurlApi*> Curl() {
  static std::unique_ptr<CurlApi> api;
  static const Status loaded = [] {
    Result<std::unique_ptr<CurlApi>> r = LoadCurl("libcurl.so.4");
    if (!r.ok()) return r.status();
    if ((*r)->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      return Status::IOError("libcurl failed to initialize");
    api = std::move(*r);
    return Status::OK();
  }();
  if (!loaded.ok()) return loaded;
  return static_cast<const CurlApi*>(api.get());
}

}  // namespace chunkstore::internal

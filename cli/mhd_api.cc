// SPDX-License-Identifier: Apache-2.0
// Loading libmicrohttpd (mhd_api.h).
#include "mhd_api.h"

#include <dlfcn.h>

#include <memory>
#include <string>

namespace cli {

namespace {

chunkstore::Result<const MhdApi*> Load() {
  static const char kSoname[] = "libmicrohttpd.so.12";
  void* lib = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return chunkstore::Status::IOError(std::string("serve needs ") + kSoname + " (Debian: libmicrohttpd12): " +
                                       dlerror());
  auto api = std::make_unique<MhdApi>();
  std::string missing;
  auto get = [&](auto& fn, const char* name) {
    void* sym = dlsym(lib, name);
    if (!sym) missing += std::string(missing.empty() ? "" : ", ") + name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(sym);
  };
  get(api->start_daemon, "MHD_start_daemon");
  get(api->stop_daemon, "MHD_stop_daemon");
  get(api->get_daemon_info, "MHD_get_daemon_info");
  get(api->get_connection_info, "MHD_get_connection_info");
  get(api->lookup_connection_value, "MHD_lookup_connection_value");
  get(api->create_response_from_buffer, "MHD_create_response_from_buffer");
  get(api->create_response_from_callback, "MHD_create_response_from_callback");
  get(api->add_response_header, "MHD_add_response_header");
  get(api->queue_response, "MHD_queue_response");
  get(api->destroy_response, "MHD_destroy_response");
  if (!missing.empty()) return chunkstore::Status::IOError(std::string(kSoname) + " lacks " + missing);
  return api.release();  // kept for the life of the process, as the library is
}

}  // namespace

chunkstore::Result<const MhdApi*> Mhd() {
  static const chunkstore::Result<const MhdApi*> api = Load();
  return api;
}

}  // namespace cli

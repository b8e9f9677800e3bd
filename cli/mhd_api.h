// SPDX-License-Identifier: Apache-2.0
// libmicrohttpd, loaded when `serve` starts rather than at program start.
// Linked normally, it and what it pulls in (GnuTLS, p11-kit, nettle,
// GMP, ...) add about 5 ms to the start of every command, which every
// `cat` and `publish` would pay without ever serving anything.
//
// Thread safety: Mhd() may be called from any thread; the table it
// returns is immutable.
#pragma once

#include <microhttpd.h>

#include "chunkstore/status.h"

namespace cli {

// The libmicrohttpd functions serve uses, with the library's own types.
struct MhdApi {
  decltype(&MHD_start_daemon) start_daemon;
  decltype(&MHD_stop_daemon) stop_daemon;
  decltype(&MHD_get_daemon_info) get_daemon_info;
  decltype(&MHD_get_connection_info) get_connection_info;
  decltype(&MHD_lookup_connection_value) lookup_connection_value;
  decltype(&MHD_create_response_from_buffer) create_response_from_buffer;
  decltype(&MHD_create_response_from_callback) create_response_from_callback;
  decltype(&MHD_add_response_header) add_response_header;
  decltype(&MHD_queue_response) queue_response;
  decltype(&MHD_destroy_response) destroy_response;
};

// libmicrohttpd.so.12, loaded on the first call; later calls return the
// same table, or the same error (naming the library and the Debian
// package that has it).
chunkstore::Result<const MhdApi*> Mhd();

}  // namespace cli

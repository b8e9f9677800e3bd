// SPDX-License-Identifier: Apache-2.0
// The read-only file system `chunkstore mount` serves (libfuse3, low-level
// API): names as paths, trees as directories, every version under
// .versions/ and every object by id under .objects/. mount.cc mounts it;
// this file keeps what the kernel is told apart from how it is mounted.
// Its parts: the names (mount_catalog.h), the inodes (mount_nodes.h) and
// the reads of open files (mount_read.h).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chunkstore/store.h"

namespace cli {

struct MountConfig {
  // Names published after the mount are seen within this many seconds.
  double refresh_seconds = 5;
};

class MountFs {
 public:
  // log: one line (without its newline) for stderr; called from many
  // threads, one call at a time is up to it.
  MountFs(chunkstore::Store& store, const MountConfig& config, std::function<void(const std::string&)> log);
  ~MountFs();
  MountFs(const MountFs&) = delete;
  MountFs& operator=(const MountFs&) = delete;

  // Reads the name listing once, so that a store whose index cannot be
  // read fails before anything is mounted.
  chunkstore::Status Load();

  // file: the one that holds the kernel's read-ahead for this mount in KiB
  // (/sys/class/bdi/MAJOR:MINOR/read_ahead_kb; empty: unknown), from which
  // follows how far out of order a sequential read may arrive; without it
  // the least such distance is assumed. set_kib: what mount.cc wrote there
  // (0: nothing), which the answer to the kernel's INIT then keeps. Call
  // before the session's loop starts.
  void SetReadAhead(const std::string& file, uint32_t set_kib);

  // The operations table, and the userdata to hand libfuse with it.
  static const fuse_lowlevel_ops* Ops();
  void* UserData();

  struct Impl;  // internal

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace cli

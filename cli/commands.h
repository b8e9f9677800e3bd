// SPDX-License-Identifier: Apache-2.0
// The chunkstore subcommands. Each returns the process exit code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/chunker.h"
#include "chunkstore/store.h"

namespace cli {

struct Globals {
  std::string store_dir;  // empty: the default location
  std::string secret_file;  // empty: $CHUNKSTORE_SECRET_FILE, else none
  bool quiet = false;
  bool json = false;
  std::string progress = "auto";  // auto, json or none (terminal.h, WantProgress)
  size_t cache_bytes = 0;  // verified chunks the store keeps for repeated reads; 0: the library's default
  std::string cache_dir;    // a bucket store's local cache (index, fetched chunks); "": the library's default
  uint64_t cache_size = UINT64_MAX;  // fetched chunks kept on disk (bytes); UINT64_MAX: the library's default
  std::string token_file;  // an http:// store's write token (copy --token-file); empty: $CHUNKSTORE_TOKEN_FILE, else none
  std::string http_token;  // the token read from it, for the store OpenStore opens (CmdCopy reads it)
};

struct PublishArgs {
  std::vector<std::string> inputs;
  std::string name;
  std::string name_prefix;
  bool force_hash = false;
};

struct ServeArgs {
  std::string listen = "127.0.0.1:8080";
  bool allow_write = false;
  std::string token_file;
  unsigned max_connections = 256;
  unsigned max_per_client = 64;
  unsigned timeout_seconds = 30;
  uint64_t max_upload_mib = 0;  // the largest write's body (PUT /objects, POST /push); 0: no limit
  unsigned threads = 0;  // 0: twice the cores, at least 4
  size_t cache_mib = 512;  // verified chunks kept for repeated reads
};

struct MountArgs {
  std::string mountpoint;
  double refresh_seconds = 5;
  uint32_t read_ahead_kib = 1024;  // 0: leave the kernel's
  bool debug = false;
};

struct RestoreArgs {
  std::string ref, dest;
  bool delete_extra = false;
  bool verify_existing = false;
  bool no_sparse = false;
};

int CmdInit(const Globals& g, const chunkstore::ChunkerParams& params, const std::string& compression,
            bool no_compression,
            uint32_t inline_max);
int CmdPublish(const Globals& g, const PublishArgs& a);
int CmdCat(const Globals& g, const std::string& ref, const std::string& offset,
           const std::string& length, const std::string& out_path, bool no_sparse);
int CmdStat(const Globals& g, const std::string& ref);
int CmdLs(const Globals& g, const std::string& prefix, bool all, bool recursive);
int CmdRestore(const Globals& g, const RestoreArgs& a);
int CmdDiff(const Globals& g, const std::string& from, const std::string& to);
int CmdServe(const Globals& g, const ServeArgs& a);
int CmdMount(const Globals& g, const MountArgs& a);
int CmdCopy(const Globals& g, const std::string& from, const std::string& to, const std::vector<std::string>& refs);
// A tree's entries (recursive: everything below it), for ls of a tree.
int ListTree(const Globals& g, chunkstore::Store& store, const std::string& ref, bool recursive);
int CmdLog(const Globals& g, const std::string& name);
int CmdTag(const Globals& g, const std::string& ref, const std::string& name);
int CmdRm(const Globals& g, const std::vector<std::string>& names, const std::string& object);
int CmdGc(const Globals& g, bool dry_run, double compact_below, int64_t grace_seconds);
int CmdVerify(const Globals& g, const std::vector<std::string>& refs, bool quick);
int CmdStats(const Globals& g);
int CmdIndexRebuild(const Globals& g);
int CmdRepairQuarantine(const Globals& g, const std::string& key);
int CmdRepairChunks(const Globals& g, const std::string& from);
int CmdChunks(const Globals& g, const std::string& path, const chunkstore::ChunkerParams& params);

}  // namespace cli

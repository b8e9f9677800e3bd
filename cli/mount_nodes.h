// SPDX-License-Identifier: Apache-2.0
// The inodes of `chunkstore mount`: what each path the kernel looked up
// stands for, numbered as lookups come and forgotten when the kernel
// forgets them (its FORGET counts). What a node shows is fixed when it is
// made, and its inode is keyed by all of it: a path that comes to show
// something else (a name's new version) is a new inode, so the kernel
// never mixes the cached pages or attributes of two objects.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace cli {

enum class NodeKind { kNameDir, kVersionsDir, kObjectsDir, kFile, kTreeDir, kSymlink };

struct Node {
  NodeKind kind = NodeKind::kFile;
  std::string key;     // in the index of nodes by content (NodeTable)
  std::string prefix;  // kNameDir, kVersionsDir: names below start with it
  std::string id;      // kFile: its object; kTreeDir: its tree
  std::string target;  // kSymlink
  uint64_t size = 0;
  uint32_t mode = 0;  // permission bits
  int64_t mtime_ns = 0;
  bool immutable = false;  // fixed by an id: long timeouts
  fuse_ino_t fixed = 0;    // the root, .versions, .objects: their inode, never forgotten
};

// Inodes 1 (the root, a name directory), 2 (.versions) and 3 (.objects)
// exist from the start, with mtime_ns as their mtime; others come from
// Intern. Thread safe.
class NodeTable {
 public:
  static constexpr fuse_ino_t kVersions = 2, kObjects = 3;
  explicit NodeTable(int64_t mtime_ns);
  std::shared_ptr<const Node> Get(fuse_ino_t ino);
  // The inode of n, found at name in parent, counted as one lookup.
  // Identical nodes at the same place share an inode.
  fuse_ino_t Intern(fuse_ino_t parent, const std::string& name, Node n);
  // The kernel dropped count lookups of ino; at none left it is gone.
  void Forget(fuse_ino_t ino, uint64_t count);

 private:
  // A node never changes once made; only its count of lookups does.
  struct Slot {
    std::shared_ptr<const Node> node;
    uint64_t lookups = 0;
  };
  std::mutex mu_;
  std::unordered_map<fuse_ino_t, Slot> nodes_;
  std::unordered_map<std::string, fuse_ino_t> by_key_;
  fuse_ino_t next_ = 4;
};

}  // namespace cli

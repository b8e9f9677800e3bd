// SPDX-License-Identifier: Apache-2.0
// NodeTable (mount_nodes.h): inode numbers for what `chunkstore mount`
// shows, and their lookup counts.
#include "mount_nodes.h"

namespace cli {

NodeTable::NodeTable(int64_t mtime_ns) {
  auto add = [this, mtime_ns](fuse_ino_t ino, NodeKind kind) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->mode = 0555;
    n->fixed = ino;
    n->mtime_ns = mtime_ns;
    nodes_[ino].node = std::move(n);
  };
  add(FUSE_ROOT_ID, NodeKind::kNameDir);
  add(kVersions, NodeKind::kVersionsDir);
  add(kObjects, NodeKind::kObjectsDir);
}

std::shared_ptr<const Node> NodeTable::Get(fuse_ino_t ino) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : it->second.node;
}

fuse_ino_t NodeTable::Intern(fuse_ino_t parent, const std::string& name, Node n) {
  if (n.fixed) return n.fixed;
  n.key = std::to_string(parent) + '/' + name + '\0' + std::to_string(static_cast<int>(n.kind)) + n.id + '\0' +
          n.target + '\0' + std::to_string(n.mtime_ns) + '\0' + std::to_string(n.mode) + '\0' + n.prefix;
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_key_.find(n.key);
  if (it != by_key_.end()) {
    ++nodes_[it->second].lookups;
    return it->second;
  }
  const fuse_ino_t ino = next_++;
  by_key_[n.key] = ino;
  nodes_[ino] = Slot{std::make_shared<const Node>(std::move(n)), 1};
  return ino;
}

void NodeTable::Forget(fuse_ino_t ino, uint64_t count) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = nodes_.find(ino);
  if (it == nodes_.end() || it->second.node->fixed) return;
  Slot& slot = it->second;
  slot.lookups = count >= slot.lookups ? 0 : slot.lookups - count;
  if (slot.lookups > 0) return;
  by_key_.erase(slot.node->key);
  nodes_.erase(it);
}

}  // namespace cli

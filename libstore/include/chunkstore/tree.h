// SPDX-License-Identifier: Apache-2.0
// Trees: directories kept as objects (Store::PublishTree, OpenTree,
// RestoreTree, DiffTrees in store.h).
//
// A tree object lists one directory: its permission bits and mtime, and
// its entries sorted bytewise by name. A file entry names an ordinary
// object (deduplicated like any other); a directory entry names the tree
// object of that directory; a symlink entry holds its target. A tree's id
// is the SHA-256 of its canonical encoding (docs/format.md, "Trees"), so
// the same directory gets the same id on every machine, and names point at
// trees, with history, as at any object.
//
// What a tree keeps: regular files (content, permission bits including
// setuid/setgid/sticky, mtime to the nanosecond), directories (permission
// bits, mtime, including empty ones), symlinks (target, mtime; never
// followed). What it does not: owners and groups, access times, extended
// attributes, ACLs, hard links (each name is its own file, their content
// stored once), sockets, FIFOs and device nodes (skipped when publishing,
// so a tree never holds one and a restore never creates one).
//
// Paths inside a tree are written REF:PATH wherever a ref is taken
// (store.h, Store::Resolve): "release/v1:bin/tool", "sha256:<hex>:docs".
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace chunkstore {

enum class EntryType : uint8_t {
  kFile = 1,
  kDirectory = 2,
  kSymlink = 3,
};

// "file", "dir" or "symlink".
const char* EntryTypeName(EntryType type);

struct TreeEntry {
  // One path component (Tree::entries), or the path from the tree's root
  // with '/' between components (Store::WalkTree, TreeChange).
  std::string name;
  EntryType type = EntryType::kFile;
  // Permission bits (mode & 07777): files, and directories as their own
  // tree records them (WalkTree, LookupPath). 0 for symlinks.
  uint32_t mode = 0;
  // Modification time, nanoseconds since the epoch: files and symlinks,
  // and directories as their own tree records it (WalkTree, LookupPath).
  int64_t mtime_ns = 0;
  // Files: content bytes. Symlinks: the target's length. Directories: 0.
  uint64_t size = 0;
  // Files: the content's object id; directories: their tree's id
  // ("sha256:<hex>"); symlinks: empty.
  std::string id;
  // Symlinks: where the link points, as stored (never followed).
  std::string target;
};

// One directory, as its tree object holds it.
struct Tree {
  std::string id;  // "sha256:<hex>"
  uint32_t mode = 0;
  int64_t mtime_ns = 0;
  std::vector<TreeEntry> entries;  // sorted bytewise by name
};

struct TreePublishOptions {
  // Read and hash every file, even those the stat cache says are unchanged
  // since this store last published them (default false). The stat cache
  // trusts a file whose path, device, inode, size, mtime and ctime are all
  // as they were, and whose object the store still holds.
  bool force_hash = false;
  // Called now and then with the file bytes read and the files done so
  // far, from the publishing thread.
  std::function<void(uint64_t bytes, uint64_t files)> progress;
  // Called for what below the directory is not published, with its path
  // and why: sockets, FIFOs and devices ("socket", "fifo", "device"), and
  // the store's own directory ("the store itself").
  std::function<void(const std::string& path, const std::string& why)> skipped;
};

struct TreePublishResult {
  std::string id;  // the tree's id, "sha256:<hex>"
  std::string name;
  int64_t version = 0;  // the name's new version (0: no name)
  uint64_t files = 0, directories = 0, symlinks = 0;  // in the whole tree, the root included
  uint64_t bytes = 0;         // file content, in all
  uint64_t files_read = 0;    // files read and hashed
  uint64_t files_cached = 0;  // files the stat cache vouched for, not read
  uint64_t skipped = 0;       // special files and the like (see TreePublishOptions::skipped)
  // Pack and inline bytes the tree added to the store. Store::PublishTree
  // fills it in; within a Batch it is known at Commit, whose result for
  // the tree's root gives it as new_bytes.
  uint64_t new_bytes = 0;
};

struct RestoreOptions {
  // Remove what DEST holds that the tree does not (default false: extra
  // files stay).
  bool delete_extra = false;
  // Read files whose type, size and mtime already match and compare their
  // SHA-256 with the tree's (default false: such files are taken as
  // unchanged, as rsync does).
  bool verify_existing = false;
  // Write runs of zero blocks as holes (default true).
  bool sparse = true;
  // Called now and then with the bytes written and the entries done so
  // far, from the restoring thread.
  std::function<void(uint64_t bytes, uint64_t entries)> progress;
  // Once *cancel is true, the restore stops at its next file with IOError
  // "interrupted" (what it wrote stays; a rerun finishes the job).
  const std::atomic<bool>* cancel = nullptr;
};

struct RestoreReport {
  uint64_t files_written = 0;     // created or replaced
  uint64_t files_unchanged = 0;   // already as the tree has them
  uint64_t bytes_written = 0;
  uint64_t directories = 0;       // created or matched
  uint64_t symlinks_written = 0;  // created or replaced
  uint64_t metadata_fixed = 0;    // right content, mode or mtime set again
  uint64_t removed = 0;           // extra entries removed (delete_extra)
};

enum class ChangeKind : uint8_t {
  kAdded,      // only in the second tree
  kRemoved,    // only in the first
  kModified,   // content or symlink target differs
  kType,       // a different kind of entry (a file became a directory, ...)
  kMetadata,   // same content, other mode or mtime
};

// "added", "removed", "modified", "type" or "metadata".
const char* ChangeKindName(ChangeKind kind);

struct TreeChange {
  ChangeKind kind = ChangeKind::kModified;
  std::string path;   // from the trees' roots, '/' between components
  TreeEntry before;   // empty name when kind is kAdded
  TreeEntry after;    // empty name when kind is kRemoved
};

}  // namespace chunkstore

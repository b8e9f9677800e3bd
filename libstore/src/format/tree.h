// SPDX-License-Identifier: Apache-2.0
// Trees: the canonical encoding of one directory, the content of a tree
// object (docs/format.md, "Trees").
//
// A tree lists one directory: its own permission bits and mtime, then its
// entries sorted bytewise by name, each a file (mode, mtime, size, object
// id), a directory (the id of its own tree) or a symlink (mtime, target).
// A directory is a tree object of its own, so a tree of trees describes a
// whole hierarchy, and an unchanged subdirectory keeps its id from one
// publish to the next. A tree's id is the SHA-256 of its encoding, as for
// any object; the encoding is canonical (one directory has exactly one),
// so the same directory gets the same id on every machine.
//
// The decoder is strict, because a tree read from a store is input like
// any other: entry names must be one path component (no '/', no NUL, not
// empty, "." or ".."), strictly increasing (so no duplicates), within
// their length limits; only permission bits may be set in a mode; unknown
// types, trailing bytes and counts the bytes cannot hold are errors. A
// restore can therefore trust every name it gets to stay inside its
// destination.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunkstore/status.h"
#include "chunkstore/tree.h"
#include "hash/digest.h"

namespace chunkstore::internal {

// Longest entry name (bytes) and symlink target a tree may hold: the
// limits of Linux file systems (NAME_MAX, PATH_MAX less its NUL).
constexpr size_t kMaxEntryName = 255;
constexpr size_t kMaxLinkTarget = 4095;
// Permission bits, the only bits a mode may hold (rwx for three classes,
// setuid, setgid, sticky).
constexpr uint32_t kModeBits = 07777;
// The largest tree object this code decodes (a directory of millions of
// entries fits well within it).
constexpr uint64_t kMaxTreeBytes = 1ull << 30;
// The deepest nesting of trees that is walked or restored: far past what
// a path of PATH_MAX bytes can reach.
constexpr int kMaxTreeDepth = 2048;

struct TreeNode {
  EntryType type = EntryType::kFile;
  std::string name;
  uint32_t mode = 0;     // files
  int64_t mtime_ns = 0;  // files and symlinks
  uint64_t size = 0;     // files
  Digest id;             // files: the object; directories: their tree
  std::string target;    // symlinks
};

struct TreeData {
  uint32_t mode = 0;     // of the directory itself
  int64_t mtime_ns = 0;  // of the directory itself
  std::vector<TreeNode> entries;  // strictly increasing by name
};

// Whether name can be an entry name (one path component).
Status CheckEntryName(std::string_view name);

// Encodes a tree. The entries must be sorted and valid (InvalidArgument
// otherwise, naming the first bad one).
Result<std::string> EncodeTree(const TreeData& tree);
// Decodes a tree object's content; Corruption for anything that is not a
// canonical tree.
Result<TreeData> DecodeTree(std::string_view bytes);
// Whether content begins like a tree (the magic): a cheap test before a
// full decode.
bool LooksLikeTree(std::string_view bytes);

// The distinct object ids a tree names (files and subtrees), sorted: what
// keeps them alive while the tree is.
std::vector<Digest> TreeRefs(const TreeData& tree);

// The public form of an entry.
TreeEntry ToPublicEntry(const TreeNode& node);

}  // namespace chunkstore::internal

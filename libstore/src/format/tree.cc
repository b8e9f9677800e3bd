// SPDX-License-Identifier: Apache-2.0
// Tree objects (tree.h): the canonical encoding of a directory and its
// strict decoder. The layout is in docs/format.md ("Trees").
#include "format/tree.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace chunkstore::internal {

namespace {

constexpr char kMagic[8] = {'C', 'K', 'T', 'R', 'E', 'E', '1', '\n'};
// The smallest encoded entry, a symlink's: type, name length, a one-byte
// name, mtime, target length and a one-byte target (a directory's takes
// 36 bytes, a file's 56). It bounds the entry count a tree's size allows.
constexpr size_t kMinEntry = 1 + 2 + 1 + 8 + 2 + 1;

void PutLe(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}
  bool ok() const { return ok_; }
  size_t left() const { return s_.size() - pos_; }
  uint64_t Le(int n) {
    if (!Need(n)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(s_[pos_ + i])) << (8 * i);
    pos_ += n;
    return v;
  }
  std::string_view Take(size_t n) {
    if (!Need(n)) return {};
    std::string_view v = s_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  Digest Id() {
    Digest d;
    std::string_view b = Take(32);
    if (ok_) std::memcpy(d.bytes.data(), b.data(), 32);
    return d;
  }

 private:
  bool Need(size_t n) {
    if (!ok_ || left() < n) ok_ = false;
    return ok_;
  }
  std::string_view s_;
  size_t pos_ = 0;
  bool ok_ = true;
};

Status CheckTarget(std::string_view target) {
  if (target.empty()) return Status::InvalidArgument("a symlink target cannot be empty");
  if (target.size() > kMaxLinkTarget)
    return Status::InvalidArgument("a symlink target of " + std::to_string(target.size()) + " bytes is over the limit of " +
                                   std::to_string(kMaxLinkTarget));
  if (target.find('\0') != std::string_view::npos) return Status::InvalidArgument("a symlink target holds a NUL byte");
  return Status::OK();
}

// Names as they may appear in a message: printable ASCII kept, anything
// else escaped, at most 64 bytes.
std::string Shown(std::string_view name) {
  std::string out;
  for (size_t i = 0; i < name.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      out += esc;
    }
  }
  if (name.size() > 64) out += "...";
  return out;
}

}  // namespace

Status CheckEntryName(std::string_view name) {
  if (name.empty()) return Status::InvalidArgument("an entry name cannot be empty");
  if (name.size() > kMaxEntryName)
    return Status::InvalidArgument("entry name '" + Shown(name) + "' is " + std::to_string(name.size()) +
                                   " bytes long; the limit is " + std::to_string(kMaxEntryName));
  if (name == "." || name == "..") return Status::InvalidArgument("an entry cannot be named '" + std::string(name) + "'");
  if (name.find('/') != std::string_view::npos)
    return Status::InvalidArgument("entry name '" + Shown(name) + "' holds a '/'");
  if (name.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("entry name '" + Shown(name) + "' holds a NUL byte");
  return Status::OK();
}

Result<std::string> EncodeTree(const TreeData& tree) {
  if (tree.mode & ~kModeBits) return Status::InvalidArgument("a directory mode holds more than permission bits");
  std::string s(kMagic, sizeof kMagic);
  PutLe(s, tree.mode, 4);
  PutLe(s, static_cast<uint64_t>(tree.mtime_ns), 8);
  PutLe(s, tree.entries.size(), 4);
  const TreeNode* prev = nullptr;
  for (const TreeNode& e : tree.entries) {
    CHUNKSTORE_RETURN_IF_ERROR(CheckEntryName(e.name));
    if (prev && !(prev->name < e.name))
      return Status::InvalidArgument("tree entries are not in strictly increasing order at '" + Shown(e.name) + "'");
    prev = &e;
    PutLe(s, static_cast<uint8_t>(e.type), 1);
    PutLe(s, e.name.size(), 2);
    s += e.name;
    switch (e.type) {
      case EntryType::kFile:
        if (e.mode & ~kModeBits) return Status::InvalidArgument("the mode of '" + Shown(e.name) + "' holds more than permission bits");
        PutLe(s, e.mode, 4);
        PutLe(s, static_cast<uint64_t>(e.mtime_ns), 8);
        PutLe(s, e.size, 8);
        s.append(reinterpret_cast<const char*>(e.id.bytes.data()), 32);
        break;
      case EntryType::kDirectory:
        s.append(reinterpret_cast<const char*>(e.id.bytes.data()), 32);
        break;
      case EntryType::kSymlink:
        CHUNKSTORE_RETURN_IF_ERROR(CheckTarget(e.target).WithContext("'" + Shown(e.name) + "'"));
        PutLe(s, static_cast<uint64_t>(e.mtime_ns), 8);
        PutLe(s, e.target.size(), 2);
        s += e.target;
        break;
      default:
        return Status::InvalidArgument("entry '" + Shown(e.name) + "' has an unknown type");
    }
  }
  return s;
}

bool LooksLikeTree(std::string_view bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

Result<TreeData> DecodeTree(std::string_view bytes) {
  if (!LooksLikeTree(bytes)) return Status::Corruption("not a tree (its magic is missing)");
  if (bytes.size() > kMaxTreeBytes) return Status::Corruption("a tree of " + std::to_string(bytes.size()) + " bytes is over the limit");
  Reader in(bytes.substr(sizeof kMagic));
  TreeData t;
  t.mode = static_cast<uint32_t>(in.Le(4));
  t.mtime_ns = static_cast<int64_t>(in.Le(8));
  const uint64_t count = in.Le(4);
  if (!in.ok()) return Status::Corruption("tree is truncated in its header");
  if (t.mode & ~kModeBits) return Status::Corruption("tree's own mode holds more than permission bits");
  if (count > in.left() / kMinEntry) return Status::Corruption("tree claims more entries than its bytes hold");
  // A crafted count that the bytes could hold (all of them short links)
  // reserves no more than a first share; the vector grows with what
  // decodes.
  t.entries.reserve(std::min<uint64_t>(count, 65536));
  for (uint64_t i = 0; i < count; ++i) {
    TreeNode e;
    const uint8_t type = static_cast<uint8_t>(in.Le(1));
    const size_t name_len = static_cast<size_t>(in.Le(2));
    e.name = std::string(in.Take(name_len));
    if (!in.ok()) return Status::Corruption("tree is truncated at entry " + std::to_string(i));
    Status name_ok = CheckEntryName(e.name);
    if (!name_ok.ok()) return Status::Corruption("tree entry " + std::to_string(i) + ": " + name_ok.message());
    if (!t.entries.empty() && !(t.entries.back().name < e.name))
      return Status::Corruption("tree entries are out of order or repeated at '" + Shown(e.name) + "'");
    switch (type) {
      case static_cast<uint8_t>(EntryType::kFile):
        e.type = EntryType::kFile;
        e.mode = static_cast<uint32_t>(in.Le(4));
        e.mtime_ns = static_cast<int64_t>(in.Le(8));
        e.size = in.Le(8);
        e.id = in.Id();
        if (in.ok() && (e.mode & ~kModeBits))
          return Status::Corruption("tree entry '" + Shown(e.name) + "' has a mode with more than permission bits");
        if (in.ok() && e.size > static_cast<uint64_t>(INT64_MAX))
          return Status::Corruption("tree entry '" + Shown(e.name) + "' has an impossible size");
        break;
      case static_cast<uint8_t>(EntryType::kDirectory):
        e.type = EntryType::kDirectory;
        e.id = in.Id();
        break;
      case static_cast<uint8_t>(EntryType::kSymlink): {
        e.type = EntryType::kSymlink;
        e.mtime_ns = static_cast<int64_t>(in.Le(8));
        const size_t target_len = static_cast<size_t>(in.Le(2));
        e.target = std::string(in.Take(target_len));
        if (!in.ok()) break;
        Status target_ok = CheckTarget(e.target);
        if (!target_ok.ok()) return Status::Corruption("tree entry '" + Shown(e.name) + "': " + target_ok.message());
        break;
      }
      default:
        return Status::Corruption("tree entry '" + Shown(e.name) + "' has unknown type " + std::to_string(type));
    }
    if (!in.ok()) return Status::Corruption("tree is truncated at entry '" + Shown(e.name) + "'");
    t.entries.push_back(std::move(e));
  }
  if (in.left() != 0) return Status::Corruption("tree has " + std::to_string(in.left()) + " bytes after its last entry");
  return t;
}

std::vector<Digest> TreeRefs(const TreeData& tree) {
  std::vector<Digest> refs;
  for (const TreeNode& e : tree.entries)
    if (e.type != EntryType::kSymlink) refs.push_back(e.id);
  std::sort(refs.begin(), refs.end());
  refs.erase(std::unique(refs.begin(), refs.end()), refs.end());
  return refs;
}

TreeEntry ToPublicEntry(const TreeNode& node) {
  TreeEntry e;
  e.name = node.name;
  e.type = node.type;
  e.mode = node.mode;
  e.mtime_ns = node.mtime_ns;
  e.size = node.type == EntryType::kSymlink ? node.target.size() : node.size;
  if (node.type != EntryType::kSymlink) e.id = node.id.ObjectId();
  e.target = node.target;
  return e;
}

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// Ref resolution (refs.h).
#include "index/refs.h"

#include "chunkstore/store.h"

namespace chunkstore::internal {

namespace {

bool IsHex(const std::string& s) {
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    const char lower = static_cast<char>(c | 0x20);
    if (!digit && !(lower >= 'a' && lower <= 'f')) return false;
  }
  return !s.empty();
}

Result<Digest> Loaded(Index& index, const Digest& id, ObjectRow* row_out) {
  if (row_out == nullptr) return id;
  Result<std::optional<ObjectRow>> row = index.FindObject(id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return Status::NotFound("no object " + id.ObjectId());
  *row_out = std::move(**row);
  return id;
}

}  // namespace

Result<Digest> ResolveRef(Index& index_ref, const std::string& ref, ObjectRow* row_out) {
  Index* index = &index_ref;
  if (ref.empty()) return Status::InvalidArgument("empty ref");
  std::string hex = ref;
  const bool explicit_id = ref.rfind("sha256:", 0) == 0;
  if (explicit_id) hex = ref.substr(7);
  if (explicit_id && (!IsHex(hex) || hex.size() < 8 || hex.size() > 64))
    return Status::InvalidArgument("malformed object id '" + ref +
                                   "': expected sha256: and 8 to 64 hex digits");
  const bool hex_only = IsHex(hex);
  if (hex_only && hex.size() == 64) {
    Digest d = *Digest::FromHex(hex);
    Result<std::optional<ObjectRow>> row = index->FindObject(d);
    if (!row.ok()) return row.status();
    if (!row->has_value()) return Status::NotFound("no object " + d.ObjectId());
    if (row_out) *row_out = std::move(**row);
    return d;
  }
  if (hex_only && hex.size() >= 8) {
    std::vector<Digest> found;
    {
      Result<std::vector<Digest>> r = index->FindObjectsByPrefix(hex, 11);
      if (!r.ok()) return r.status();
      found = std::move(*r);
    }
    if (found.size() == 1) return Loaded(*index, found[0], row_out);
    if (found.size() > 1) {
      std::string msg = "ambiguous id prefix " + hex + " matches " +
                        (found.size() > 10 ? "more than 10" : std::to_string(found.size())) +
                        " objects:";
      for (size_t i = 0; i < found.size() && i < 10; ++i) msg += " " + found[i].ObjectId();
      return Status::InvalidArgument(msg);
    }
    if (explicit_id) return Status::NotFound("no object with id prefix " + hex);
    // Otherwise it may still be a name that happens to look like hex.
  }
  // NAME@N and NAME@latest where what follows the last '@' is a version;
  // otherwise the '@' is part of the name ("node_modules/@types/x"). A
  // name that itself ends in "@5" is written "NAME@5@latest".
  std::string name = ref;
  int64_t version = 0;
  const size_t at = ref.rfind('@');
  if (at != std::string::npos && at > 0) {
    const std::string v = ref.substr(at + 1);
    if (v == "latest") {
      name = ref.substr(0, at);
    } else if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos) {
      if (v.size() > 18) return Status::InvalidArgument("version number too large in '" + ref + "'");
      name = ref.substr(0, at);
      version = std::stoll(v);
      if (version < 1) return Status::InvalidArgument("version numbers start at 1 in '" + ref + "'");
    }
  }
  Status valid = ValidateName(name);
  if (!valid.ok()) return valid.WithContext("malformed ref");
  Result<std::optional<NameRow>> row = index->FindName(name, version);
  if (!row.ok()) return row.status();
  if (!row->has_value()) {
    if (version != 0) return Status::NotFound("name " + name + " has no version " + std::to_string(version));
    return Status::NotFound("no object or name matches '" + ref + "'");
  }
  return Loaded(*index, (*row)->object, row_out);
}

Result<ObjectRow> LoadObject(Index& index, const Digest& id) {
  Result<std::optional<ObjectRow>> row = index.FindObject(id);
  if (!row.ok()) return row.status();
  if (!row->has_value()) return Status::NotFound("no object " + id.ObjectId());
  return std::move(**row);
}

}  // namespace chunkstore::internal

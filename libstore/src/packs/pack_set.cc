// SPDX-License-Identifier: Apache-2.0
// What every PackSet shares: pack writers' buffering, and opening packs
// for reading by the index's pack id.
#include "packs/pack_set.h"

#include "format/layout.h"

namespace chunkstore::internal {

namespace {

// Small records are gathered and written together. A larger one goes to
// the file straight from the chunk's buffer: staging it would cost a pass
// over its bytes for a saving of one write call.
constexpr size_t kWriteBuffer = 1 << 20;
constexpr size_t kStageBelow = 64 << 10;
// Write-back is started every this many bytes, so that the final fsync of
// a large publish finds little left to do.
constexpr uint64_t kWriteBackEvery = 8u << 20;

}  // namespace

Status PackWriter::Append(const uint8_t* header, size_t header_len, const uint8_t* data, size_t n) {
  if (header_len + n >= kStageBelow) {
    CHUNKSTORE_RETURN_IF_ERROR(Flush());
    CHUNKSTORE_RETURN_IF_ERROR(file->Append(header, header_len));
    CHUNKSTORE_RETURN_IF_ERROR(file->Append(data, n));
  } else {
    if (buffer.size() + header_len + n > kWriteBuffer) CHUNKSTORE_RETURN_IF_ERROR(Flush());
    buffer.insert(buffer.end(), header, header + header_len);
    buffer.insert(buffer.end(), data, data + n);
  }
  size += header_len + n;
  if (size - written_back >= kWriteBackEvery) {
    CHUNKSTORE_RETURN_IF_ERROR(Flush());
    file->StartWriteBack();
    written_back = size;
  }
  return Status::OK();
}

Status PackWriter::Flush() {
  if (buffer.empty()) return Status::OK();
  Status s = file->Append(buffer.data(), buffer.size());
  buffer.clear();
  return s;
}

Result<std::shared_ptr<File>> PackSet::ForRead(int64_t pack_id) {
  {
    std::lock_guard<std::mutex> l(open_mu_);
    auto it = open_.find(pack_id);
    if (it != open_.end()) return it->second;
  }
  std::optional<PackRow> row;
  {
    auto db = index_->Lock();
    Result<std::optional<PackRow>> r = db->FindPack(pack_id);
    if (!r.ok()) return r.status();
    row = *r;
  }
  if (!row) return Status::Corruption("the index names a pack (row " + std::to_string(pack_id) + ") it does not record");
  if (!IsPackName(row->name))
    return Status::Corruption("the index names a pack '" + row->name.substr(0, 64) + "', which is not a pack name");
  Result<std::unique_ptr<File>> f = Open(row->name, row->size);
  if (!f.ok()) {
    if (f.status().IsNotFound()) return Status::Corruption("pack " + row->name + " is missing from " + Describe());
    return f.status();
  }
  std::shared_ptr<File> file(std::move(*f));
  std::lock_guard<std::mutex> l(open_mu_);
  open_.emplace(pack_id, file);
  return file;
}

void PackSet::ForgetOpen() {
  std::lock_guard<std::mutex> l(open_mu_);
  open_.clear();
}

void PackSet::ForgetOpen(int64_t pack_id) {
  std::lock_guard<std::mutex> l(open_mu_);
  open_.erase(pack_id);
}

}  // namespace chunkstore::internal

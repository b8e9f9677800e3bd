// SPDX-License-Identifier: Apache-2.0
// Store::Receive: taking in a push (format/push_format.h) that another
// machine's CopyTo sent to this store over HTTP.
//
// A push comes from a client with the server's token, but it is still
// input: a forged object could claim the id of content it is not, and
// every later copy or publish of the real content would find "its" id
// present and send nothing. So nothing in a push is taken on its word.
// Each object's whole content is hashed against its id (with its chain
// states computed here, never taken from the stream), reading the chunks
// the push does not carry from this store, verified as every read is
// (and re-checked at commit like any chunk a publish reuses); each pushed
// chunk is hashed against its id in the same pass, two-lane where the SHA
// unit allows, when the first object that lists it is hashed. A tree is decoded, and every
// object it names must be in the push or the store; so must every object
// a name points at. Only when the whole stream has passed is anything
// committed, as one change; any fault leaves the store as it was.
// Something missing is NotFound rather than Corruption: the sender's view
// of this store may only be behind (a gc here removed what it saw).
#include <cstring>
#include <unordered_map>

#include "format/compress.h"
#include "format/push_format.h"
#include "format/tree.h"
#include "hash/sha256_pair.h"
#include "ingest/source.h"
#include "store/store_impl.h"

namespace chunkstore {

using namespace internal;

namespace {

class Receiver {
 public:
  Receiver(Store::Impl* impl, const ReadAt& read_at, ReceiveReport* report)
      : impl_(impl), read_at_(read_at), report_(report), session_(impl->publish_target()) {}

  // A chunk is only noted here: it is hashed against its id when the
  // first object that lists it is hashed (in the same pass, Sha256Stream::
  // UpdateAlongside), or at the end if no object lists it.
  Status Chunk(const PushRecord& r) {
    const std::string hex = r.id.Hex();
    if (r.length > impl_->meta.chunking.max_size)
      return Status::Corruption("chunk " + hex + " is longer than this store's largest chunk", "", hex);
    auto [at, fresh] = pushed_.emplace(r.id, Pushed{r.data, static_cast<uint32_t>(r.length), false});
    if (!fresh && at->second.length != r.length)
      return Status::Corruption("chunk " + hex + " is pushed twice at different lengths", "", hex);
    return Status::OK();
  }

  // Pushed chunks no object listed, checked and added before the commit.
  Status Unlisted() {
    for (auto& [id, p] : pushed_) {
      if (p.added) continue;
      auto b = std::make_shared<Buffer>(p.length);
      CHUNKSTORE_RETURN_IF_ERROR(read_at_(p.offset, b->data(), p.length));
      if (Sha256::Of(b->data(), p.length) != id)
        return Status::Corruption("chunk " + id.Hex() + ": the pushed bytes do not hash to its id", "", id.Hex());
      CHUNKSTORE_RETURN_IF_ERROR(Add(id, *b));
      p.added = true;
    }
    return Status::OK();
  }

  Status Object(const PushRecord& r) {
    const std::string oid = r.id.ObjectId();
    if (r.entries.empty() && r.size != 0) return Status::Corruption("object " + oid + ": no chunks", oid);
    Sha256Stream hash;
    std::string tree_bytes;
    if ((r.flags & kPushTree) && r.size > kMaxTreeBytes)
      return Status::Corruption("object " + oid + ": a tree larger than trees may be", oid);
    for (const ManifestEntry& e : r.entries) {
      Pushed* pushed = nullptr;
      Result<ChunkLoader::Bytes> bytes = ChunkBytes(oid, e, &pushed);
      if (!bytes.ok()) return bytes.status();
      const uint8_t* p = (*bytes)->data();
      size_t left = (*bytes)->size();
      hash.MarkChunk();
      if (pushed && !pushed->added) {
        // The chunk's own hash shares the object hash's pass.
        Sha256Partial own;
        own.Start(p, left);
        while (left > 0 && own.HasBlocks()) {
          const size_t used = hash.UpdateAlongside(p, left, own);
          p += used;
          left -= used;
        }
        hash.Update(p, left);
        if (own.Finish() != e.id)
          return Status::Corruption("chunk " + e.id.Hex() + ": the pushed bytes do not hash to its id", "", e.id.Hex());
        CHUNKSTORE_RETURN_IF_ERROR(Add(e.id, **bytes));
        pushed->added = true;
      } else {
        hash.Update(p, left);
      }
      if (r.flags & kPushTree) tree_bytes.append(reinterpret_cast<const char*>((*bytes)->data()), (*bytes)->size());
    }
    const Digest got = r.entries.empty() ? Sha256::Of(nullptr, 0) : hash.Finish();
    if (got != r.id) return Status::Corruption("object " + oid + ": its chunks hash to sha256:" + got.Hex(), oid);
    ObjectRole role;
    CHUNKSTORE_RETURN_IF_ERROR(Role(r, tree_bytes, &role));
    std::vector<ChainState> chain;
    if (!r.entries.empty()) chain = std::move(hash.chain());
    Result<PublishResult> added = session_.AddObject(r.id, r.size, r.entries, chain, "", role);
    if (!added.ok()) return added.status();
    ++report_->objects;
    return Status::OK();
  }

  Status Whole(const PushRecord& r) {
    const std::string oid = r.id.ObjectId();
    if (r.length == 0 || r.length > impl_->meta.chunking.max_size)
      return Status::Corruption("object " + oid + ": a whole-object record of " + std::to_string(r.length) + " bytes", oid);
    std::string content(r.length, '\0');
    CHUNKSTORE_RETURN_IF_ERROR(read_at_(r.data, content.data(), content.size()));
    if (Sha256::Of(content.data(), content.size()) != r.id)
      return Status::Corruption("object " + oid + ": the pushed bytes do not hash to its id", oid);
    ObjectRole role;
    CHUNKSTORE_RETURN_IF_ERROR(Role(r, content, &role));
    IngestedChunk c;
    c.id = r.id;
    c.length = static_cast<uint32_t>(content.size());
    c.data = reinterpret_cast<const uint8_t*>(content.data());
    if (content.size() > impl_->meta.inline_max) {
      c.codec = TryCompress(c.data, c.length, &c.packed, {impl_->meta.compression});
      if (c.codec == Codec::kRaw) c.packed.clear();
    }
    Result<PublishResult> added = session_.AddWhole(c, "", role);
    if (!added.ok()) return added.status();
    ++report_->objects;
    return Status::OK();
  }

  Status Source(const PushRecord& r) {
    const std::string oid = r.id.ObjectId();
    std::string tree_bytes;
    if (r.flags & kPushTree) {
      if (r.length > kMaxTreeBytes) return Status::Corruption("object " + oid + ": a tree larger than trees may be", oid);
      tree_bytes.resize(r.length);
      CHUNKSTORE_RETURN_IF_ERROR(read_at_(r.data, tree_bytes.data(), tree_bytes.size()));
    }
    ObjectRole role;
    CHUNKSTORE_RETURN_IF_ERROR(Role(r, tree_bytes, &role));
    uint64_t at = 0;
    PullSource source([&](void* buf, size_t n) -> Result<size_t> {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, r.length - at));
      if (take) CHUNKSTORE_RETURN_IF_ERROR(read_at_(r.data + at, buf, take));
      at += take;
      return take;
    });
    Result<PublishResult> added = session_.AddSource(source, "", role);
    if (!added.ok()) return added.status();
    if (added->id != oid)
      return Status::Corruption("object " + oid + ": the pushed bytes hash to " + added->id + " (nothing was kept)", oid);
    report_->chunks_written += added->chunks - added->reused_chunks;
    report_->chunks_present += added->reused_chunks;
    report_->bytes_written += r.length;
    ++report_->objects;
    return Status::OK();
  }

  Status Name(const PushRecord& r) {
    CHUNKSTORE_RETURN_IF_ERROR(ValidateName(r.name));
    CHUNKSTORE_RETURN_IF_ERROR(Present(r.id, "name " + r.name + " points at"));
    session_.AddNameVersion(r.name, r.id, r.created);
    ++report_->name_versions;
    return Status::OK();
  }

  Status Commit() {
    CHUNKSTORE_RETURN_IF_ERROR(Unlisted());
    return session_.Commit();
  }

 private:
  struct Pushed {
    uint64_t offset;
    uint32_t length;
    bool added;  // hashed against its id and added to the session
  };

  // A chunk of an object: from the push (*pushed set; not yet checked
  // unless added), or from this store (verified as it is read).
  Result<ChunkLoader::Bytes> ChunkBytes(const std::string& oid, const ManifestEntry& e, Pushed** pushed) {
    auto p = pushed_.find(e.id);
    if (p != pushed_.end()) {
      if (p->second.length != e.length)
        return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is " + std::to_string(p->second.length) +
                                      " bytes, not " + std::to_string(e.length),
                                  oid, e.id.Hex());
      auto b = std::make_shared<Buffer>(e.length);
      CHUNKSTORE_RETURN_IF_ERROR(read_at_(p->second.offset, b->data(), e.length));
      *pushed = &p->second;
      return ChunkLoader::Bytes(std::move(b));
    }
    Result<std::optional<ChunkLocation>> loc = impl_->index.Lock()->FindChunk(e.id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value())
      return Status::NotFound("object " + oid + ": chunk " + e.id.Hex() + " is neither in the push nor in this store");
    Result<ChunkLoader::Bytes> b = impl_->loader->Load(oid, e.id, **loc, false, false);
    if (!b.ok()) return b.status();
    if ((*b)->size() != e.length)
      return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is " + std::to_string((*b)->size()) +
                                    " bytes here, not " + std::to_string(e.length),
                                oid, e.id.Hex());
    // Noted as reused, so the commit checks it is still there.
    Result<bool> noted = session_.AddChunk(e.id, (*b)->data(), static_cast<uint32_t>((*b)->size()));
    if (!noted.ok()) return noted.status();
    return b;
  }

  // A checked chunk, written unless the session or the store holds it.
  Status Add(const Digest& id, const Buffer& b) {
    Result<bool> written = session_.AddChunk(id, b.data(), static_cast<uint32_t>(b.size()));
    if (!written.ok()) return written.status();
    if (*written) {
      ++report_->chunks_written;
      report_->bytes_written += b.size();
    } else {
      ++report_->chunks_present;
    }
    return Status::OK();
  }

  // The object's role; a tree's content decoded and what it names found.
  Status Role(const PushRecord& r, const std::string& tree_bytes, ObjectRole* role) {
    role->member = (r.flags & kPushMember) != 0;
    if (!(r.flags & kPushTree)) return Status::OK();
    const std::string oid = r.id.ObjectId();
    Result<TreeData> tree = DecodeTree(tree_bytes);
    if (!tree.ok()) return Status::Corruption("object " + oid + " is pushed as a tree but is not one: " + tree.status().message(), oid);
    role->tree = true;
    role->refs = TreeRefs(*tree);
    for (const Digest& ref : role->refs) CHUNKSTORE_RETURN_IF_ERROR(Present(ref, "tree " + oid + " names"));
    return Status::OK();
  }

  // An object this push added before, or one the store holds (checked
  // again at commit).
  Status Present(const Digest& id, const std::string& who) {
    if (session_.Holds(id)) return Status::OK();
    Result<uint64_t> there = session_.ReuseObject(id);
    if (there.ok()) return Status::OK();
    if (there.status().IsNotFound())
      return Status::NotFound(who + " object " + id.ObjectId() + ", which neither the push nor this store holds");
    return there.status();
  }

  Store::Impl* impl_;
  const ReadAt& read_at_;
  ReceiveReport* report_;
  PublishSession session_;
  std::unordered_map<Digest, Pushed, DigestHash> pushed_;  // where each pushed chunk is
};

}  // namespace

Result<ReceiveReport> Store::Receive(const std::function<Status(uint64_t, void*, size_t)>& read_at, uint64_t size) {
  if (impl_->read_only) return Status::InvalidArgument("the store " + dir() + " is read-only");
  ReadAt at = read_at;
  PushReader reader(at, size);
  CHUNKSTORE_RETURN_IF_ERROR(reader.Start());
  ReceiveReport report;
  Receiver rx(impl_.get(), at, &report);
  for (;;) {
    Result<PushRecord> r = reader.Next();
    if (!r.ok()) return r.status();
    Status s;
    switch (r->kind) {
      case PushKind::kChunk: s = rx.Chunk(*r); break;
      case PushKind::kObject: s = rx.Object(*r); break;
      case PushKind::kWhole: s = rx.Whole(*r); break;
      case PushKind::kSource: s = rx.Source(*r); break;
      case PushKind::kName: s = rx.Name(*r); break;
      case PushKind::kEnd:
        CHUNKSTORE_RETURN_IF_ERROR(rx.Commit());
        return report;
    }
    if (!s.ok()) return s.WithContext("push record " + std::to_string(reader.records()));
  }
}

}  // namespace chunkstore

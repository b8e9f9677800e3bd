// SPDX-License-Identifier: Apache-2.0
// ChangeSet: one change to a store, as its change log keeps it.
//
// Every change a store makes — a publish or batch, a tag, a removal, a gc
// step — is one change set: the packs it writes or grows, the chunks it
// adds (with where they are), the objects, the name versions, and what it
// removes. A checkpoint is a change set too: the whole live state, which
// lets the log before it be dropped. A directory store appends change sets
// to its log segments (log/), a bucket store writes each as a blob under
// log/; both apply them to the index with the same function
// (index/apply.h), so the index is only ever what the log says.
//
// The encoding (docs/format.md, "Change sets") is decoded with bounds
// checks: a damaged or hostile change set is an error, never a crash, an
// oversized allocation or a path outside the store (pack names must pass
// IsPackName, object and name fields their own checks).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunkstore/status.h"
#include "format/rows.h"

namespace chunkstore::internal {

struct ChangeSet {
  enum Kind : uint8_t {
    kPublish = 1,       // packs, chunks, objects, names
    kTag = 2,           // names
    kRemoveName = 3,    // removed_names
    kRemoveObject = 4,  // removed_objects
    kGc = 5,            // removed objects, chunks and packs; chunks moved into new packs
    kCheckpoint = 6,    // the whole state; names carry their versions and times
    kCheckpointMark = 7,  // nothing: a bucket's checkpoint of every record before it exists
  };
  Kind kind = kPublish;
  int64_t time = 0;  // unix seconds, by the writer's clock

  struct Pack {
    std::string name;
    uint64_t size = 0;  // its committed length after this change
  };
  struct Chunk {
    Digest id;
    uint32_t pack = 0;  // index into packs
    ChunkLocation loc;  // pack_id unused
  };
  struct Name {
    std::string name;
    Digest object;
    int64_t version = 0;  // 0: the next version when applied (checkpoints give it)
    int64_t created = 0;  // 0: the change's time
  };
  struct RemovedChunk {
    Digest id;
    std::string pack;  // only the row in this pack goes
  };

  std::vector<Pack> packs;
  std::vector<Chunk> chunks;  // new; in a gc, moved (they replace the old row)
  std::vector<ObjectRow> objects;
  std::vector<Name> names;
  std::vector<std::string> removed_names;
  std::vector<Digest> removed_objects;
  std::vector<RemovedChunk> removed_chunks;
  std::vector<std::string> removed_packs;  // with every chunk row still in them

  bool empty() const {
    return packs.empty() && chunks.empty() && objects.empty() && names.empty() && removed_names.empty() &&
           removed_objects.empty() && removed_chunks.empty() && removed_packs.empty();
  }
};

// The bytes of a change set. With a secret (a bucket store's, see
// docs/design.md "Who may write"), they end in an HMAC-SHA256 under that
// secret of where the change set is kept (bound_to: its blob key) and
// everything before the HMAC, so that a signed change set copied to
// another key fails its check as a forged one does.
std::string EncodeChangeSet(const ChangeSet& c, const std::string& secret = {}, const std::string& bound_to = {});

// Decodes what EncodeChangeSet wrote, and the log records of bucket stores
// of format 1 (which carry no name versions). With a secret, a change set
// without a valid HMAC under it for bound_to is Corruption; without one,
// the HMAC is not checked (the xxHash64 check always is).
Result<ChangeSet> DecodeChangeSet(std::string_view bytes, const std::string& secret = {},
                                  const std::string& bound_to = {});

const char* ChangeKindName(ChangeSet::Kind kind);

// Whether a change set holds what only stores of the current format may
// (config.h): a tree object, or a name with an '@' in it. Older versions
// refuse such stores outright instead of misreading them (their gc would
// not know that a tree keeps its files alive).
bool NeedsCurrentFormat(const ChangeSet& c);

}  // namespace chunkstore::internal

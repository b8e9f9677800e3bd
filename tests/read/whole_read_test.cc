// SPDX-License-Identifier: Apache-2.0
// Whole reads prove the object's id: a sequential read from the start
// hands out the last byte only once the content's SHA-256 is the object's
// id, whatever the manifest says. Chunk lists that were damaged or forged
// (swapped chunks with a recomputed check, with or without chain states
// made to match) are refused; chunk geometries around block boundaries
// read back on both SHA-256 paths; what a range read can and cannot prove.
#include <atomic>
#include <set>

#include "chunkstore/env.h"
#include "format/manifest.h"
#include "hash/sha256_pair.h"
#include "test_util.h"

namespace chunkstore {
namespace {

using internal::ChainState;
using internal::ManifestEntry;
using testing::RandomBytes;

// Fails one read of a pack: the n-th read (1-based) that covers byte
// `offset` of a pack file fails with an I/O error; every other read, and
// every later one, goes through.
class OneFailedPackRead : public EnvWrapper {
 public:
  OneFailedPackRead() : EnvWrapper(Env::Posix()) {}
  void Arm(uint64_t offset, int nth) {
    offset_ = offset;
    seen_ = 0;
    nth_ = nth;
  }
  int seen() const { return seen_.load(); }
  Result<std::unique_ptr<File>> OpenFile(const std::string& path, OpenMode mode) override {
    Result<std::unique_ptr<File>> f = EnvWrapper::OpenFile(path, mode);
    if (!f.ok() || path.size() < 5 || path.compare(path.size() - 5, 5, ".pack") != 0) return f;
    return std::unique_ptr<File>(new Pack(this, std::move(*f)));
  }

 private:
  class Pack : public File {
   public:
    Pack(OneFailedPackRead* env, std::unique_ptr<File> f) : env_(env), f_(std::move(f)) {}
    Status Append(const void* data, size_t n) override { return f_->Append(data, n); }
    Status ReadAt(uint64_t off, size_t n, void* buf, size_t* got) const override {
      if (off <= env_->offset_ && env_->offset_ < off + n && ++env_->seen_ == env_->nth_)
        return Status::IOError("injected read failure");
      return f_->ReadAt(off, n, buf, got);
    }
    Status Sync() override { return f_->Sync(); }
    Status Truncate(uint64_t size) override { return f_->Truncate(size); }
    Result<uint64_t> Size() const override { return f_->Size(); }

   private:
    OneFailedPackRead* env_;
    std::unique_ptr<File> f_;
  };
  std::atomic<uint64_t> offset_{UINT64_MAX};
  std::atomic<int> seen_{0}, nth_{0};
};

class WholeRead : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    internal::SetSha256PairInterleaveForTesting(GetParam());
    store_ = *Store::Open(dir_ / "s", Opts());
  }
  void TearDown() override { internal::SetSha256PairInterleaveForTesting(true); }

  // Reads ref from its start in reads of `step` bytes, as far as it goes.
  // *error gets what stopped it.
  std::vector<uint8_t> ReadUntilError(const std::string& ref, size_t step, Status* error) {
    std::vector<uint8_t> out;
    auto r = store_->OpenReader(ref);
    if (!r.ok()) {
      *error = r.status();
      return out;
    }
    std::vector<uint8_t> buf(step);
    for (;;) {
      auto n = (*r)->Read(buf.data(), buf.size());
      if (!n.ok()) {
        *error = n.status();
        return out;
      }
      if (*n == 0) break;
      out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*n));
    }
    *error = Status::OK();
    return out;
  }

  // Rewrites an object's manifest in the index (the store closed and
  // reopened around it).
  void SetManifest(const std::string& id, const std::string& manifest) {
    store_.reset();
    testing::Sql(dir_ / "s", "UPDATE objects SET manifest = x'" + internal::HexEncode(
                                                                       reinterpret_cast<const uint8_t*>(manifest.data()),
                                                                       manifest.size()) +
                                 "' WHERE hex(id) = upper('" + id.substr(7) + "')");
    store_ = *Store::Open(dir_ / "s", Opts());
  }

  Options Opts() {
    Options o = testing::SmallChunks();
    o.env = &env_;
    return o;
  }

  internal::Manifest ManifestOf(const std::string& id, uint64_t size) {
    const std::string hex = testing::Sql(dir_ / "s", "SELECT hex(manifest) FROM objects WHERE hex(id) = upper('" +
                                                         id.substr(7) + "')");
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    auto m = internal::DecodeManifestWithChain(*internal::Digest::FromHex(id.substr(7)), size, bytes.data(), bytes.size());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return std::move(*m);
  }

  // Swaps chunks 1 and 2 of id's chunk list and gives it chain states made
  // for the swapped content, the check recomputed: every link holds.
  void ForgeSwappedWithStates(const std::string& id, const std::vector<uint8_t>& data) {
  internal::Manifest m = ManifestOf(id, data.size());
  ASSERT_GE(m.entries.size(), 4u);
  ASSERT_EQ(m.chain.size(), m.entries.size()) << "publishes write version-2 manifests";
  std::swap(m.entries[1], m.entries[2]);
  // What the swapped content is, and its chain states.
  std::vector<uint8_t> swapped;
  const auto chunks = *store_->Chunks(id);
  for (size_t order : {size_t{0}, size_t{2}, size_t{1}}) {
    swapped.insert(swapped.end(), data.begin() + static_cast<std::ptrdiff_t>(chunks[order].offset),
                   data.begin() + static_cast<std::ptrdiff_t>(chunks[order].offset + chunks[order].length));
  }
  swapped.insert(swapped.end(), data.begin() + static_cast<std::ptrdiff_t>(chunks[3].offset), data.end());
  internal::Sha256Stream s;
  for (size_t at = 0, i = 0; i < m.entries.size(); at += m.entries[i++].length) {
    s.MarkChunk();
    s.Update(swapped.data() + at, m.entries[i].length);
  }
  s.Finish();
  const internal::Digest digest = *internal::Digest::FromHex(id.substr(7));
  SetManifest(id, internal::EncodeManifest(digest, data.size(), m.entries, s.chain()));
  }

  OneFailedPackRead env_;
  testing::TempDir dir_;
  std::unique_ptr<Store> store_;
};

INSTANTIATE_TEST_SUITE_P(Paths, WholeRead, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Interleaved" : "OpenSsl"; });

TEST_P(WholeRead, EveryChunkGeometryReadsBackWhole) {
  std::string text;
  while (text.size() < 200000) text += "line " + std::to_string(text.size() % 9973) + " of a text\n";
  std::vector<std::vector<uint8_t>> inputs;
  for (size_t size : {size_t{1} << 16, size_t{100000}, size_t{100001}, size_t{65536 + 63}, size_t{64 * 1000}})
    inputs.push_back(RandomBytes(size, size));
  inputs.emplace_back(text.begin(), text.end());  // compressed chunks
  for (const auto& data : inputs) {
    auto r = store_->PublishBytes(data.data(), data.size());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_GT(r->chunks, 2u);
    for (size_t step : {size_t{1} << 20, size_t{4096}, size_t{7}}) {
      Status err;
      const auto got = ReadUntilError(r->id, step, &err);
      ASSERT_TRUE(err.ok()) << data.size() << " step " << step << ": " << err.ToString();
      EXPECT_TRUE(got == data) << data.size() << " step " << step;
    }
  }
}

// The strongest forgery of a chunk list: swapped chunks, with chain states
// made for the swapped content and the check recomputed. Every link holds,
// so every chunk but the last is handed out, and the last is not: the
// digest is not the object's id.
TEST_P(WholeRead, ASwappedChunkListWithMatchingStatesFailsBeforeTheLastByte) {
  const auto data = RandomBytes(150000, 21);
  const std::string id = store_->PublishBytes(data.data(), data.size(), "x")->id;
  const auto chunks = *store_->Chunks(id);
  ASSERT_NO_FATAL_FAILURE(ForgeSwappedWithStates(id, data));
  Status err;
  const auto got = ReadUntilError(id, 4096, &err);
  ASSERT_TRUE(err.IsCorruption()) << err.ToString();
  EXPECT_EQ(err.object_id(), id);
  EXPECT_NE(err.message().find("does not match its id"), std::string::npos) << err.message();
  EXPECT_LT(got.size(), data.size() - chunks.back().length + 1) << "the last chunk was handed out";
  // The name resolves to the same, and a range read says what it can:
  // every chunk it touches is the chunk its manifest names.
  auto reader = store_->OpenReader("x");
  ASSERT_TRUE(reader.ok());
  std::vector<uint8_t> first(100);
  ASSERT_TRUE((*reader)->ReadAt(0, first.data(), first.size()).ok());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), data.begin()));
}

// A whole read that failed its proof leaves its reader unproven, however
// far it got and whatever is read through it after, so nothing that
// trusts IdProven (serve's whole GETs from the cache) takes its chunk list
// for the object's.
TEST_P(WholeRead, AReadThatFailedItsProofLeavesTheReaderUnproven) {
  const auto data = RandomBytes(150000, 26);
  const std::string id = store_->PublishBytes(data.data(), data.size())->id;
  ASSERT_NO_FATAL_FAILURE(ForgeSwappedWithStates(id, data));
  auto reader = std::move(*store_->OpenReader(id));
  std::vector<uint8_t> buf(4096);
  Status err;
  for (;;) {
    auto n = reader->Read(buf.data(), buf.size());
    if (!n.ok()) {
      err = n.status();
      break;
    }
    ASSERT_GT(*n, 0u) << "the forged list was read to its end";
  }
  EXPECT_TRUE(err.IsCorruption()) << err.ToString();
  EXPECT_FALSE(reader->IdProven());
  std::vector<uint8_t> all(data.size());
  ASSERT_TRUE(reader->ReadAt(0, all.data(), all.size()).ok()) << "each chunk is the one its list names";
  EXPECT_FALSE(reader->IdProven());
  ASSERT_TRUE(reader->Seek(0).ok());
  for (;;) {
    auto n = reader->Read(buf.data(), buf.size());
    if (!n.ok() || *n == 0) break;
  }
  EXPECT_FALSE(reader->IdProven()) << "nor does a second whole read prove it";
}

// Where a link fails, the two chunks around it are fetched again to see
// which is damaged. If that fetch of the next chunk fails for another
// reason (the disk, the network), nothing is known of the chunks: the
// failure is the read's error. Were it taken for damage, the read would go
// on chunk by chunk with no proof, and a chunk list naming other content
// would be read to its end without an error.
TEST_P(WholeRead, AnIoErrorWhileTellingWhichChunkIsDamagedIsTheReadsError) {
  const auto data = RandomBytes(150000, 27);
  const std::string id = store_->PublishBytes(data.data(), data.size())->id;
  internal::Manifest m = ManifestOf(id, data.size());
  ASSERT_GE(m.entries.size(), 4u);
  std::swap(m.entries[1], m.entries[2]);
  SetManifest(id, internal::EncodeManifest(*internal::Digest::FromHex(id.substr(7)), data.size(), m.entries, m.chain));
  // The chunk now second in the list: read once for the link, then again
  // to tell which chunk is damaged; that second read fails.
  const std::string where = testing::Sql(dir_ / "s", "SELECT offset FROM chunks WHERE hex(id) = upper('" + m.entries[1].id.Hex() + "')");
  env_.Arm(std::stoull(where, nullptr, 10), 2);
  Status err;
  const auto got = ReadUntilError(id, 4096, &err);
  ASSERT_GE(env_.seen(), 2) << "the injected failure was not reached";
  EXPECT_TRUE(err.IsIOError()) << err.ToString();
  EXPECT_LT(got.size(), data.size());
  // Read again, with the disk sound: the chunk list is what is wrong.
  env_.Arm(UINT64_MAX, 0);
  ReadUntilError(id, 4096, &err);
  EXPECT_TRUE(err.IsCorruption()) << err.ToString();
}

// Swapped chunks under the states that were the object's: the first link
// past the swap breaks, and both chunks there are intact, so it is the
// chunk list that is wrong.
TEST_P(WholeRead, ASwappedChunkListUnderTheOldStatesFailsAtTheSwap) {
  const auto data = RandomBytes(150000, 22);
  const std::string id = store_->PublishBytes(data.data(), data.size())->id;
  internal::Manifest m = ManifestOf(id, data.size());
  ASSERT_GE(m.entries.size(), 4u);
  std::swap(m.entries[1], m.entries[2]);
  SetManifest(id, internal::EncodeManifest(*internal::Digest::FromHex(id.substr(7)), data.size(), m.entries, m.chain));
  Status err;
  const auto got = ReadUntilError(id, 1 << 20, &err);
  ASSERT_TRUE(err.IsCorruption()) << err.ToString();
  EXPECT_EQ(err.object_id(), id);
  EXPECT_TRUE(err.chunk_id().empty()) << "no chunk is damaged: " << err.ToString();
  EXPECT_LT(got.size(), data.size() / 2);
  auto v = store_->Verify();
  ASSERT_TRUE(v.ok());
  std::set<std::string> kinds;
  for (const auto& p : v->problems) kinds.insert(p.kind);
  EXPECT_TRUE(kinds.count("bad-object")) << "verify recomputes the id";
}

TEST_P(WholeRead, ADamagedChainStateIsTheObjectsError) {
  const auto data = RandomBytes(120000, 23);
  const std::string id = store_->PublishBytes(data.data(), data.size())->id;
  internal::Manifest m = ManifestOf(id, data.size());
  m.chain[2].h[3] ^= 1;
  SetManifest(id, internal::EncodeManifest(*internal::Digest::FromHex(id.substr(7)), data.size(), m.entries, m.chain));
  Status err;
  ReadUntilError(id, 1 << 20, &err);
  ASSERT_TRUE(err.IsCorruption()) << err.ToString();
  EXPECT_EQ(err.object_id(), id);
}

// A version-1 chunk list (objects published before chain states) is
// proven by hashing the whole read: a forged one fails at the end.
// A reader used at random first (a header read, a range, the last chunk)
// still proves a later read from the start, and random reads in the
// middle of a read in order do not stop its proof.
TEST_P(WholeRead, AReaderUsedAtRandomStillProvesAWholeReadFromTheStart) {
  const auto data = RandomBytes(150000, 25);
  const std::string id = store_->PublishBytes(data.data(), data.size(), "x")->id;
  const auto chunks = *store_->Chunks(id);
  ASSERT_NO_FATAL_FAILURE(ForgeSwappedWithStates(id, data));
  for (int use = 0; use < 4; ++use) {
    auto r = store_->OpenReader(id);
    ASSERT_TRUE(r.ok());
    std::vector<uint8_t> buf(4096);
    if (use == 0) {
      ASSERT_TRUE((*r)->ReadAt(0, buf.data(), 8).ok());
    }
    if (use == 1) {
      ASSERT_TRUE((*r)->ReadAt(chunks.back().offset, buf.data(), 8).ok());
    }
    if (use == 2) {
      ASSERT_TRUE((*r)->Seek(chunks[1].offset).ok());
      ASSERT_TRUE((*r)->Read(buf.data(), 8).ok());
      ASSERT_TRUE((*r)->ReadAt(0, buf.data(), 8).ok());
    }
    Status err;
    uint64_t total = 0;
    if (use == 3) {
      // Random reads in the middle of a read in order leave its proof be.
      auto n = (*r)->Read(buf.data(), 100);
      ASSERT_TRUE(n.ok());
      total += *n;
      ASSERT_TRUE((*r)->ReadAt(chunks[2].offset, buf.data(), 8).ok());
      ASSERT_TRUE((*r)->ReadAt(chunks.back().offset, buf.data(), 8).ok());
      ASSERT_TRUE((*r)->ReadAt(50, buf.data(), 8).ok());
    } else {
      ASSERT_TRUE((*r)->Seek(0).ok());
    }
    for (;;) {
      auto n = (*r)->Read(buf.data(), buf.size());
      if (!n.ok()) {
        err = n.status();
        break;
      }
      if (*n == 0) break;
      total += *n;
    }
    EXPECT_TRUE(err.IsCorruption()) << "use " << use << ": " << err.ToString();
    EXPECT_LT(total, data.size()) << "use " << use;
  }
}

TEST_P(WholeRead, AForgedVersionOneChunkListFailsBeforeTheLastByte) {
  const auto data = RandomBytes(150000, 24);
  const std::string id = store_->PublishBytes(data.data(), data.size())->id;
  internal::Manifest m = ManifestOf(id, data.size());
  const auto digest = *internal::Digest::FromHex(id.substr(7));
  SetManifest(id, internal::EncodeManifest(digest, data.size(), m.entries));  // version 1, honest
  Status err;
  ASSERT_TRUE(ReadUntilError(id, 4096, &err) == data);
  ASSERT_TRUE(err.ok()) << err.ToString();
  std::swap(m.entries[1], m.entries[2]);
  SetManifest(id, internal::EncodeManifest(digest, data.size(), m.entries));
  const auto got = ReadUntilError(id, 4096, &err);
  ASSERT_TRUE(err.IsCorruption()) << err.ToString();
  EXPECT_EQ(err.object_id(), id);
  EXPECT_LT(got.size(), data.size() - m.entries.back().length + 1);
}

// One chunk is its own proof: the chunk a one-chunk object names must be
// the object.
TEST_P(WholeRead, AOneChunkObjectNamingAnotherChunkIsRefusedAtOpen) {
  const auto a = RandomBytes(3000, 25), b = RandomBytes(3000, 26);
  const std::string ida = store_->PublishBytes(a.data(), a.size())->id;
  const std::string idb = store_->PublishBytes(b.data(), b.size())->id;
  const auto digest_a = *internal::Digest::FromHex(ida.substr(7));
  SetManifest(ida, internal::EncodeManifest(digest_a, 3000, {{*internal::Digest::FromHex(idb.substr(7)), 3000}}));
  auto r = store_->OpenReader(ida);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_EQ(r.status().object_id(), ida);
}

}  // namespace
}  // namespace chunkstore

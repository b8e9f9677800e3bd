// The ingest pipeline on inputs that change size under it.
#include "digest.h"
#include "ingest.h"
#include "test_util.h"

namespace chunkstore::internal {
namespace {

class CollectSink final : public IngestSink {
 public:
  bool IsKnown(const Digest&, uint32_t) override { return true; }
  Status Accept(IngestedChunk& c) override {
    bytes.insert(bytes.end(), c.data, c.data + c.length);
    return Status::OK();
  }
  std::vector<uint8_t> bytes;
};

TEST(Ingest, AFileThatGrowsAfterItsSizeWasTakenIsReadWhole) {
  testing::TempDir dir;
  const auto first = testing::RandomBytes(3000, 1), more = testing::RandomBytes(70000, 2);
  testing::WriteFile(dir / "f", first);
  auto src = FileSource::Open(dir / "f");
  ASSERT_TRUE(src.ok());
  {
    std::ofstream f(dir / "f", std::ios::binary | std::ios::app);
    f.write(reinterpret_cast<const char*>(more.data()), static_cast<std::streamsize>(more.size()));
  }
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = 1;
  CollectSink sink;
  auto out = Ingest(**src, cfg, &sink);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  auto all = first;
  all.insert(all.end(), more.begin(), more.end());
  EXPECT_EQ(out->size, all.size());
  EXPECT_EQ(sink.bytes, all);
  EXPECT_EQ(out->object_id, Sha256::Of(all.data(), all.size()));
}

TEST(Ingest, AFileThatShrankIsReadToItsNewEnd) {
  testing::TempDir dir;
  const auto data = testing::RandomBytes(50000, 3);
  testing::WriteFile(dir / "f", data);
  auto src = FileSource::Open(dir / "f");
  ASSERT_TRUE(src.ok());
  std::filesystem::resize_file(dir / "f", 1000);
  IngestConfig cfg;
  cfg.chunking = testing::SmallChunks().chunking;
  cfg.threads = 1;
  CollectSink sink;
  auto out = Ingest(**src, cfg, &sink);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(sink.bytes, std::vector<uint8_t>(data.begin(), data.begin() + 1000));
}

}  // namespace
}  // namespace chunkstore::internal

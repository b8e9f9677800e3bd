// SPDX-License-Identifier: Apache-2.0
// The corruption campaign: damage pack files, the index, the change log
// and the config in many ways
// (flip, zero, truncate; at record headers, payloads, pack headers, and
// random places) and check that verify notices, that no read ever returns
// wrong bytes, that damage to one chunk affects only the objects that
// contain it, and that `repair chunks` from an undamaged copy mends what
// pack damage did.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "common.h"
#include "file_bytes.h"
#include "payload.h"

namespace campaign {

namespace fs = std::filesystem;
using chunkstore::Store;

namespace {

struct Obj {
  std::string id;
  uint64_t seed;
  size_t size;
  std::vector<chunkstore::ChunkInfo> chunks;
};

using chunkstore::testing::ReadFileBytes;

void Spit(const std::string& path, const std::vector<uint8_t>& d) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(d.data()), static_cast<std::streamsize>(d.size()));
}

}  // namespace

int Corrupt(int argc, char** argv) {
  std::string dir = "/tmp/chunkstore-corrupt", out;
  int trials = 200;
  uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--dir") dir = argv[i + 1];
    else if (k == "--trials") trials = std::atoi(argv[i + 1]);
    else if (k == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--json") out = argv[i + 1];
    else Die("corrupt: unknown flag " + k);
  }
  fs::remove_all(dir);
  const std::string store_dir = dir + "/store";
  std::vector<Obj> objs;
  std::string pack_name;
  {
    auto s = Store::Open(store_dir, CampaignOptions());
    if (!s.ok()) Die(s.status().ToString());
    for (uint64_t i = 1; i <= 16; ++i) {
      const size_t size = 20000 + (i * 77777) % 600000;
      const auto data = Payload(i, size);
      auto r = (*s)->PublishBytes(data.data(), data.size(), "o" + std::to_string(i));
      if (!r.ok()) Die(r.status().ToString());
      objs.push_back({r->id, i, size, *(*s)->Chunks(r->id)});
    }
    std::string text;  // compressible, so zlib records are damaged too
    while (text.size() < 300000) text += "line " + std::to_string(text.size() % 1000) + " of text\n";
    auto r = (*s)->PublishBytes(text.data(), text.size(), "text");
    (void)r;
  }
  for (auto& e : fs::directory_iterator(store_dir + "/packs")) pack_name = e.path().filename();
  // Undamaged copies of the whole store: one to repair from (a backup of
  // its files), one never opened to restore the store from after a repair.
  const std::string replica_dir = dir + "/replica", pristine_dir = dir + "/pristine";
  fs::copy(store_dir, replica_dir, fs::copy_options::recursive);
  fs::copy(store_dir, pristine_dir, fs::copy_options::recursive);
  const std::string pack = store_dir + "/packs/" + pack_name, index = store_dir + "/index.db";
  const std::string config = store_dir + "/config";
  std::string segment;  // the newest segment of the change log
  for (auto& e : fs::directory_iterator(store_dir + "/log"))
    if (e.path().extension() == ".log" && e.path().string() > segment) segment = e.path().string();
  if (segment.empty()) Die("the store has no log segment");
  // Checkpointed index: all of it in index.db, none in the WAL.
  const auto pack_orig = ReadFileBytes(pack), index_orig = ReadFileBytes(index);
  const auto segment_orig = ReadFileBytes(segment), config_orig = ReadFileBytes(config);
  // Record offsets of each chunk (from the pack, walking records).
  std::vector<std::pair<uint64_t, uint64_t>> records;  // offset, length incl. header
  for (uint64_t off = 16; off + 64 <= pack_orig.size();) {
    uint32_t stored = 0;
    for (int b = 3; b >= 0; --b) stored = stored << 8 | pack_orig[off + 12 + b];
    records.emplace_back(off, 64 + stored);
    off += 64 + stored;
  }
  std::map<uint64_t, std::string> chunk_at;  // record offset -> chunk id hex
  for (const auto& [off, len] : records) {
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (int b = 0; b < 32; ++b) {
      hex += kHex[pack_orig[off + 16 + b] >> 4];
      hex += kHex[pack_orig[off + 16 + b] & 15];
    }
    chunk_at[off] = hex;
    (void)len;
  }
  std::mt19937_64 rng(seed);
  double tried = 0, detected = 0, harmless = 0, wrong = 0, collateral = 0, refused_open = 0, reads = 0;
  double repair_trials = 0, repair_errors = 0, repair_all_read = 0, repair_wrong = 0, repair_clean = 0;
  std::map<std::string, double> by_kind, undetected_by_kind;
  for (int t = 0; t < trials; ++t) {
    Spit(pack, pack_orig);
    Spit(index, index_orig);
    Spit(segment, segment_orig);
    Spit(config, config_orig);
    fs::remove(index + "-wal");
    // Packs most, then the index, the change log and the config.
    const int pick = static_cast<int>(rng() % 20);
    const std::string target = pick < 11 ? "pack" : pick < 16 ? "index" : pick < 19 ? "log" : "config";
    const bool on_index = target != "pack";  // not a pack: no record offsets to aim at
    auto data = target == "pack" ? pack_orig : target == "index" ? index_orig : target == "log" ? segment_orig : config_orig;
    const int mode = static_cast<int>(rng() % 3);  // flip, zero, truncate
    const int place = static_cast<int>(rng() % 4);  // header, payload, file header, random
    uint64_t at = rng() % data.size();
    std::string hit_chunk;
    if (!on_index && place < 2) {
      const auto& rec = records[rng() % records.size()];
      at = place == 0 ? rec.first + rng() % 64 : rec.first + 64 + rng() % (rec.second - 64);
      hit_chunk = chunk_at[rec.first];
    } else if (!on_index && place == 2) {
      at = rng() % 16;
    } else if (!on_index) {
      for (const auto& rec : records)
        if (at >= rec.first && at < rec.first + rec.second) hit_chunk = chunk_at[rec.first];
    }
    const size_t len = 1 + rng() % 16;
    std::string kind = target + "-" +
                       (mode == 0 ? "flip" : mode == 1 ? "zero" : "truncate");
    bool changed = false;
    if (mode == 2) {
      if (at == 0) at = 1;
      data.resize(at);
      changed = true;
      if (!on_index) hit_chunk.clear();  // a truncation reaches every later record
    } else {
      for (size_t k = 0; k < len && at + k < data.size(); ++k) {
        const uint8_t before = data[at + k];
        data[at + k] = mode == 0 ? static_cast<uint8_t>(before ^ (1u << (rng() % 8))) : 0;
        changed |= data[at + k] != before;
      }
    }
    if (!changed) continue;  // zeroing zeros: nothing to detect
    Spit(target == "pack" ? pack : target == "index" ? index : target == "log" ? segment : config, data);
    ++tried;
    by_kind[kind] += 1;
    chunkstore::Options o = CampaignOptions();
    o.create_if_missing = false;
    auto s = Store::Open(store_dir, o);
    if (!s.ok()) {
      ++refused_open;
      ++detected;
      continue;
    }
    auto v = (*s)->Verify();
    const bool flagged = !v.ok() || v->corrupt();
    int failed_reads = 0, bad = 0;
    for (const auto& obj : objs) {
      auto got = ReadAll(**s, obj.id);
      ++reads;
      if (!got.ok()) {
        ++failed_reads;
        // Pack damage inside one record may only affect objects holding it.
        if (!hit_chunk.empty() && !on_index) {
          bool contains = false;
          for (const auto& c : obj.chunks) contains |= c.id == hit_chunk;
          if (!contains) ++collateral;
        }
        continue;
      }
      if (*got != Payload(obj.seed, obj.size)) ++bad;
    }
    wrong += bad;
    // Pack damage that was noticed is mended from the undamaged copy: every
    // object must then read back exactly, and after a gc (which rewrites a
    // shortened pack or one with a damaged header) verify must pass.
    if (target == "pack" && (flagged || failed_reads > 0)) {
      ++repair_trials;
      auto replica = Store::Open(replica_dir, o);
      auto r = replica.ok() ? (*s)->RepairChunks(**replica)
                            : chunkstore::Result<chunkstore::RepairReport>(replica.status());
      if (!r.ok()) {
        ++repair_errors;
      } else {
        int failed_after = 0, bad_after = 0;
        for (const auto& obj : objs) {
          auto got = ReadAll(**s, obj.id);
          if (!got.ok()) ++failed_after;
          else if (*got != Payload(obj.seed, obj.size)) ++bad_after;
        }
        repair_wrong += bad_after;
        if (failed_after == 0 && bad_after == 0) ++repair_all_read;
        chunkstore::GcOptions now;
        now.orphan_grace_seconds = 0;
        auto gc = (*s)->Gc(now);
        auto after = (*s)->Verify();
        if (gc.ok() && after.ok() && !after->corrupt()) {
          ++repair_clean;
        } else if (!gc.ok()) {
          std::cerr << "gc after repair failed: " << gc.status().ToString() << "\n";
        } else if (!after.ok()) {
          std::cerr << "verify after repair failed: " << after.status().ToString() << "\n";
        } else {
          for (const auto& p : after->problems) std::cerr << "after repair: " << p.kind << " " << p.message << "\n";
        }
      }
      s->reset();
      // The repair and the gc changed packs and the log: start over.
      fs::remove_all(store_dir);
      fs::copy(pristine_dir, store_dir, fs::copy_options::recursive);
    }
    if (flagged || failed_reads > 0) {
      ++detected;
    } else {
      ++harmless;  // e.g. bytes SQLite does not use: verify and every read are right
      undetected_by_kind[kind] += 1;
    }
  }
  Counters c;
  c.Set("corruptions", tried);
  c.Set("detected", detected);
  c.Set("undetected_harmless", harmless);
  c.Set("refused_at_open", refused_open);
  c.Set("reads", reads);
  c.Set("wrong_bytes_returned", wrong);
  c.Set("collateral_failures", collateral);
  c.Set("repair_trials", repair_trials);
  c.Set("repair_errors", repair_errors);
  c.Set("repair_all_read", repair_all_read);
  c.Set("repair_wrong_bytes", repair_wrong);
  c.Set("repair_verify_clean", repair_clean);
  for (const auto& [k, v] : by_kind) c.Set("tried_" + k, v);
  for (const auto& [k, v] : undetected_by_kind) c.Set("undetected_" + k, v);
  std::cout << "corrupt: " << c.Json() << "\n";
  if (!out.empty()) std::ofstream(out) << c.Json() << "\n";
  fs::remove_all(dir);
  const bool mended = repair_errors == 0 && repair_wrong == 0 && repair_all_read == repair_trials &&
                      repair_clean == repair_trials;
  return wrong == 0 && collateral == 0 && mended ? 0 : 1;
}

}  // namespace campaign

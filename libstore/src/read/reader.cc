// SPDX-License-Identifier: Apache-2.0
// Readers (store.h): the cursor over an object's verified chunks, with
// parallel read-ahead for sequential reads, and the reader of an inline
// object, whose content was verified when it was opened.
#include "read/reader.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <vector>

#include "base/stream_copy.h"
#include "format/manifest.h"
#include "hash/chain.h"
#include "hash/sha256_pair.h"
#include "index/refs.h"
#include "read/read_ahead_budget.h"

namespace chunkstore::internal {

namespace {

Status CheckSeek(uint64_t offset, uint64_t size) {
  if (offset > size)
    return Status::InvalidArgument("seek to " + std::to_string(offset) + " is past the end (" +
                                   std::to_string(size) + " bytes)");
  return Status::OK();
}

// An inline object: its content, verified at open, lives in the reader. It
// needs nothing from the store, and opening many small objects is bound by
// per-open costs, so it holds just the content and makes its id string only
// when asked.
class InlineObjectReader final : public Reader {
 public:
  InlineObjectReader(const Digest& id, std::string content) : id_(id), content_(std::move(content)) {}

  const std::string& id() const override {
    if (id_text_.empty()) id_text_ = id_.ObjectId();
    return id_text_;
  }
  uint64_t size() const override { return content_.size(); }
  uint64_t Tell() const override { return pos_; }

  Status Seek(uint64_t offset) override {
    CHUNKSTORE_RETURN_IF_ERROR(CheckSeek(offset, content_.size()));
    pos_ = static_cast<size_t>(offset);
    return Status::OK();
  }

  Result<size_t> Read(void* buf, size_t n) override {
    const size_t got = Copy(pos_, buf, n);
    pos_ += got;
    return got;
  }

  Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override { return Copy(offset, buf, n); }
  bool Cached(uint64_t, uint64_t) const override { return true; }  // checked when opened, and held
  bool IdProven() const override { return true; }

  Result<ByteView> ReadView(size_t n) override {
    const size_t take = std::min(n, content_.size() - pos_);
    ByteView view{reinterpret_cast<const uint8_t*>(content_.data()) + pos_, take};
    pos_ += take;
    return view;
  }

 private:
  size_t Copy(uint64_t offset, void* buf, size_t n) const {
    if (offset >= content_.size() || n == 0) return 0;
    const size_t take = std::min<uint64_t>(n, content_.size() - offset);
    std::memcpy(buf, content_.data() + offset, take);
    return take;
  }

  Digest id_;
  mutable std::string id_text_;
  std::string content_;
  size_t pos_ = 0;
};

// A cursor over an object's chunks. Every byte it hands out belongs to a
// chunk that was verified first, and a sequential read of the whole object
// from its start proves the object's id before the last byte is handed
// out (store.h): with a version-2 manifest by checking the chain of
// SHA-256 states chunk by chunk (hash/chain.h), the work spread over the
// read-ahead workers as the chunk checks would be; with a version-1 one
// by hashing the chunks as they are handed out. A read that seeks, or is
// told it will stop early, proves each chunk by its own SHA-256 instead.
class ObjectReader final : public Reader {
 public:
  using Bytes = ChunkCache::Bytes;

  ObjectReader(const ReadSource& source, Digest id, uint64_t size, Manifest manifest,
               std::vector<ChunkLocation> locs)
      : keep_alive_(source.keep_alive),
        loader_(source.loader),
        disk_(source.disk_cache),
        digest_(id),
        id_(id.ObjectId()),
        size_(size),
        entries_(std::move(manifest.entries)),
        chain_(std::move(manifest.chain)),
        locs_(std::move(locs)) {
    starts_.reserve(entries_.size());
    uint64_t off = 0;
    for (const auto& e : entries_) {
      starts_.push_back(off);
      off += e.length;
    }
    // Enough chunks in flight to keep every core verifying while the
    // caller copies out the current one (ChunkLoader::read_ahead_depth).
    depth_ = loader_->read_ahead_depth();
    ArmProof();
  }

  ~ObjectReader() override {
    DropAhead();
    std::unique_lock<std::mutex> l(run_mu_);
    run_cv_.wait(l, [&] { return runs_ == 0; });
  }

  const std::string& id() const override { return id_; }
  uint64_t size() const override { return size_; }
  uint64_t Tell() const override { return pos_; }

  Status Seek(uint64_t offset) override {
    CHUNKSTORE_RETURN_IF_ERROR(CheckSeek(offset, size_));
    // Back to the start: a read from here to the end proves the id again,
    // whatever this reader was used for before (ranges, random reads).
    if (offset == 0) {
      DropAhead();
      ArmProof();
    } else if (offset != pos_) {
      StopProving();
    }
    pos_ = offset;
    return Status::OK();
  }

  void LimitReadAhead(uint64_t end) override {
    end = std::min(end, size_);
    // A read that stops early proves chunks, not the object.
    if (end < size_) StopProving();
    // Chunks [0, ahead_end_) may be verified ahead: those starting below end.
    ahead_end_ = end == 0 ? 0 : ChunkAt(end - 1) + 1;
  }

  Result<size_t> Read(void* buf, size_t n) override {
    Result<size_t> r = Copy(pos_, buf, n, true);
    if (r.ok()) pos_ += *r;
    return r;
  }

  Result<size_t> ReadAt(uint64_t offset, void* buf, size_t n) override {
    return Copy(offset, buf, n, false);
  }

  bool IdProven() const override { return id_proven_ || entries_.size() <= 1; }

  void KeepInCache(bool keep) override {
    if (keep == keep_) return;
    DropAhead();  // what was read ahead was checked (and kept) the old way
    keep_ = keep;
    if (keep) StopProving();
    else if (pos_ == 0) ArmProof();
  }

  bool Cached(uint64_t offset, uint64_t length) const override {
    if (offset >= size_ || length == 0) return true;
    const uint64_t end = length > size_ - offset ? size_ : offset + length;
    const size_t last = ChunkAt(end - 1);
    for (size_t i = ChunkAt(offset); i <= last; ++i)
      if (!loader_->Cached(entries_[i].id)) return false;
    return true;
  }

  Result<size_t> ReadViews(size_t n, ByteView* views, size_t max_views) override {
    held_.clear();
    size_t count = 0, total = 0;
    while (count < max_views && total < n) {
      Result<ByteView> v = ReadView(n - total);
      if (!v.ok()) {
        held_.clear();
        return v.status();
      }
      if (v->size == 0) break;
      views[count++] = *v;
      total += v->size;
      held_.push_back(cur_);  // the next chunk takes cur_'s place; its bytes stay until the next call
    }
    return count;
  }

  Result<ByteView> ReadView(size_t n) override {
    if (pos_ >= size_ || n == 0) return ByteView{};
    const size_t i = ChunkAt(pos_);
    CHUNKSTORE_RETURN_IF_ERROR(Enter(i, true));
    const size_t within = static_cast<size_t>(pos_ - starts_[i]);
    const size_t take = std::min(n, cur_->size() - within);
    pos_ += take;
    return ByteView{cur_->data() + within, take};
  }

 private:
  // A chunk as read ahead: proven by its own SHA-256, or (in a chained
  // read) checked as a record, its link z computed, its proof pending.
  struct Loaded {
    Bytes bytes;
    ChainState z;
    bool proven = true;
  };

  // keep: whether the verified chunk goes into the store's cache. Streaming
  // reads would only evict what random reads come back for, so they skip it.
  Result<Bytes> Fetch(size_t i, bool keep = true) {
    const ChunkLocation was = LocOf(i);
    Result<Bytes> r = loader_->Load(id_, entries_[i].id, was, keep, disk_);
    if (r.ok() || !r.status().IsCorruption()) return r;
    // A gc may have moved the chunk to another pack since this reader
    // looked it up; only a failure at the chunk's current home counts.
    Result<std::optional<ChunkLocation>> now = loader_->Relocate(entries_[i].id);
    if (!now.ok()) return r;
    if (!now->has_value())
      return Status::NotFound("object " + id_ + ": chunk " + entries_[i].id.Hex() +
                              " is no longer stored (the object was removed and collected while "
                              "being read)");
    if ((*now)->pack_id == was.pack_id && (*now)->offset == was.offset) return r;
    {
      std::lock_guard<std::mutex> l(locs_mu_);
      locs_[i] = **now;
    }
    return loader_->Load(id_, entries_[i].id, **now, keep, disk_);
  }

  // Where chunk i is: as looked up at open, or where Fetch last found it
  // after a gc moved it. Fetch runs on read-ahead workers too (for a chunk
  // they could not verify), so a move may be recorded while the reader's
  // thread, or another worker, looks.
  ChunkLocation LocOf(size_t i) const {
    std::lock_guard<std::mutex> l(locs_mu_);
    return locs_[i];
  }

  Result<Loaded> FetchProven(size_t i) {
    Result<Bytes> b = Fetch(i, keep_);
    if (!b.ok()) return b.status();
    return Loaded{std::move(*b), ChainState{}, true};
  }

  // Chunk i, loaded on this thread: in a chained read, checked as a link
  // (its own SHA-256 would be a second pass over it).
  Result<Loaded> FetchNow(size_t i) {
    if (!chained_) return FetchProven(i);
    std::optional<Result<Loaded>> got;
    const ChunkLoader::ChainLink link = LinkOf(i);
    const ChunkLocation loc = LocOf(i);
    loader_->LoadOne(entries_[i].id, loc, &link, disk_, [&](Bytes b, const ChainState& z) {
      if (b) got.emplace(Loaded{std::move(b), z, false});
    });
    if (got) return std::move(*got);
    return FetchProven(i);
  }

  // Chunk i's link: its whole blocks, from the state the manifest gives.
  ChunkLoader::ChainLink LinkOf(size_t i) const {
    ChunkLoader::ChainLink l;
    l.from = chain_[i];
    const uint64_t first = BlockCeil(starts_[i]), last = BlockFloor(starts_[i] + entries_[i].length);
    l.skip = static_cast<uint32_t>(first - starts_[i]);
    l.blocks = last > first ? static_cast<uint32_t>((last - first) / 64) : 0;
    return l;
  }

  // Queues chunk i as a read-ahead task of its own (ChunkLoader::LoadOne),
  // for stores whose chunks are not verified in pairs (a bucket's: each
  // worker waits on its own fetch). Its future is set once it is settled;
  // one the task did not verify goes through Fetch, whose error names what
  // failed and which looks for a chunk gc has moved.
  void SubmitOne(size_t i, ReadAheadShare share) {
    auto promise = std::make_shared<std::promise<Result<Loaded>>>();
    ahead_.push_back(Ahead{i, promise->get_future(), std::move(share)});
    const bool chained = chained_, keep = keep_;
    loader_->ReadAhead().Submit([this, i, promise, chained, keep] {
      if (dropping_.load(std::memory_order_acquire)) {  // nobody will take it
        promise->set_value(Status::NotFound("read-ahead dropped"));
        return 0;
      }
      const internal::Digest id = entries_[i].id;
      const ChunkLocation loc = LocOf(i);
      const ChunkLoader::ChainLink link = chained ? LinkOf(i) : ChunkLoader::ChainLink{};
      loader_->LoadOne(id, loc, chained ? &link : nullptr, disk_, [&](Bytes b, const ChainState& z) {
        Settle(Queued{i, chained, keep, promise}, std::move(b), z);
      });
      return 0;
    });
  }

  // A chunk queued for the read-ahead runs (Enqueue), with how the read
  // stood when it was queued.
  struct Queued {
    size_t index = 0;
    bool chained = false;
    bool keep = false;
    std::shared_ptr<std::promise<Result<Loaded>>> promise;
  };

  // Sets a read-ahead chunk's future: its verified bytes, or what Fetch
  // makes of it when they were not verified.
  void Settle(const Queued& q, Bytes b, const ChainState& z) {
    if (b && q.keep && !q.chained) b = loader_->Keep(entries_[q.index].id, std::move(b));  // proven by its own SHA-256
    if (b) q.promise->set_value(Loaded{std::move(b), z, !q.chained});
    else q.promise->set_value(FetchProven(q.index));
  }

  // Queues chunks [i, i + shares.size()) for the read-ahead runs, each
  // with its share of the read-ahead budget, starting runs up to
  // one per worker. Each run (Run) takes queued chunks in order, two at a
  // time, until none is waiting; a lane whose partner finished first
  // takes the next chunk queued, even one queued after the run began, so
  // chunks are hashed alone only when the queue is empty.
  void Enqueue(size_t i, std::vector<ReadAheadShare> shares) {
    std::lock_guard<std::mutex> l(run_mu_);
    for (size_t k = 0; k < shares.size(); ++k) {
      auto promise = std::make_shared<std::promise<Result<Loaded>>>();
      ahead_.push_back(Ahead{i + k, promise->get_future(), std::move(shares[k])});
      queued_.push_back(Queued{i + k, chained_, keep_, std::move(promise)});
    }
    while (runs_ < loader_->read_ahead_workers() && runs_ < queued_.size()) StartRun();
  }

  // Counts and submits one more run. Under run_mu_.
  void StartRun() {
    ++runs_;
    loader_->ReadAhead().Submit([this] {
      Run();
      return 0;
    });
  }

  // One read-ahead run: verifies queued chunks until none is left, or
  // until it has taken kRunChunks while another task waits for a worker;
  // then a new run at the back of the pool's queue takes the rest, so
  // that a reader whose queue never empties (a read bound by verifying)
  // leaves the workers to other readers of the store in turn. While
  // nothing else waits the run goes on: each end of a run leaves one lane
  // to finish its chunk alone, at about half the speed of two. A run's
  // end is counted under run_mu_ together with the queue it saw, so a
  // chunk queued just after is never left without a run, and the
  // destructor waits for it (the run uses this reader until then).
  void Run() {
    Queued held[2];  // the chunks in the run's two lanes
    size_t taken = 0;
    bool handed_over = false;
    auto take = [&](ChunkLoader::RunItem* item, bool last) {
      std::lock_guard<std::mutex> l(run_mu_);
      // Once it has made way a run takes nothing more, even if the pool's
      // queue has emptied since (its successor got a worker).
      if (handed_over || queued_.empty() || (taken >= kRunChunks && loader_->ReadAhead().HasWaiting())) {
        if (!queued_.empty() && !handed_over) {
          handed_over = true;
          StartRun();
        }
        if (last) {
          --runs_;
          run_cv_.notify_all();
        }
        return false;
      }
      ++taken;
      Queued& slot = held[held[0].promise ? 1 : 0];
      slot = std::move(queued_.front());
      queued_.pop_front();
      item->key = slot.index;
      item->id = entries_[slot.index].id;
      item->loc = LocOf(slot.index);
      item->chained = slot.chained;
      if (slot.chained) item->link = LinkOf(slot.index);
      return true;
    };
    loader_->LoadRun(take, disk_, [&](size_t index, Bytes b, const ChainState& z) {
      Queued q = std::move(held[held[0].promise && held[0].index == index ? 0 : 1]);
      Settle(q, std::move(b), z);
    });
  }

  // Sequential reads verify the next chunks on other threads while the
  // caller consumes this one; bytes are still handed out in order, and
  // only after their chunk has been verified. Where Sha256Pair
  // interleaves (and the packs are local), the chunks go to a queue that
  // runs on the workers take two at a time (Enqueue); elsewhere each is a
  // task of its own. Either way depth_ chunks are kept ahead.
  Result<Loaded> FetchSequential(size_t i) {
    // Past everything read ahead (a seek forward): none of it is wanted,
    // and waiting for each would cost their reads (a bucket's GETs).
    if (!ahead_.empty() && ahead_.back().index < i) DropAhead();
    while (!ahead_.empty() && ahead_.front().index < i) {
      ahead_.front().loaded.wait();
      ahead_.pop_front();
    }
    Result<Loaded> r = Status::NotFound("");
    const bool in_order = i == next_in_order_;
    if (!ahead_.empty() && ahead_.front().index == i) {
      r = ahead_.front().loaded.get();
      ahead_.pop_front();
    } else {
      DropAhead();
      r = FetchNow(i);
    }
    next_in_order_ = i + 1;
    // From a bucket every chunk read ahead is a request, and a read that
    // takes one chunk and stops (a file's header) should cost one (two in
    // a chained read, which checks a chunk with the next one's first
    // bytes): the read-ahead grows with each chunk taken in order (0, 0,
    // 1, 3, 7, ... chunks ahead) up to depth_, and starts over after a
    // jump. Local packs cost only a little CPU to read ahead: they get all
    // of it at once.
    ramp_ = in_order ? std::min(ramp_ + 1, 16u) : 0;
    const size_t depth =
        loader_->remote() ? std::min<size_t>(depth_, ramp_ == 0 ? 0 : (size_t{1} << (ramp_ - 1)) - 1) : depth_;
    size_t next = ahead_.empty() ? i + 1 : ahead_.back().index + 1;
    const size_t end = std::min(ahead_end_, entries_.size());
    // Each chunk read ahead takes its share of the process's budget; past
    // it, nothing more is read ahead until shares come back. One reader
    // takes at most half of it beyond its first chunk ahead.
    std::vector<ReadAheadShare> shares;
    uint64_t mine = 0;
    for (const Ahead& a : ahead_) mine += a.share.bytes();
    for (size_t k = next; ahead_.size() + shares.size() < depth && k < end; ++k) {
      const uint64_t want = BufferPool::CapacityFor(entries_[k].length);
      if (mine > 0 && mine + want > ReadAheadBudget() / 2) break;
      std::optional<ReadAheadShare> share = ReadAheadShare::Take(want);
      if (!share) break;
      mine += want;
      shares.push_back(std::move(*share));
    }
    if (shares.empty()) return r;
    if (loader_->group_reads()) {
      Enqueue(next, std::move(shares));
    } else {
      for (ReadAheadShare& share : shares) SubmitOne(next++, std::move(share));
    }
    return r;
  }

  // Forgets the read-ahead: tasks not yet started skip their work, and
  // this waits for the ones running (they use this reader; pool futures
  // do not wait when destroyed).
  void DropAhead() {
    if (ahead_.empty()) return;
    {
      std::lock_guard<std::mutex> l(run_mu_);
      for (Queued& q : queued_) q.promise->set_value(Status::NotFound("read-ahead dropped"));
      queued_.clear();
    }
    dropping_.store(true, std::memory_order_release);
    for (auto& a : ahead_) a.loaded.wait();
    ahead_.clear();
    dropping_.store(false, std::memory_order_release);
  }

  // A read from the start, in order, proves the object's id.
  void ArmProof() {
    // One chunk is its own proof: its id is the object's (checked at open).
    // A reader that keeps what it reads checks chunks one by one instead.
    proving_ = entries_.size() > 1 && !keep_;
    // Chained bytes are proven only as the read goes on, too late for the
    // disk cache of a bucket store, which takes chunks proven one by one.
    chained_ = proving_ && chain_.size() == entries_.size() && !(disk_ && loader_->disk_cached());
    proven_next_ = 0;
    whole_.emplace();
    next_.reset();
    next_index_ = SIZE_MAX;
    final_done_ = false;
    ahead_end_ = SIZE_MAX;
  }

  // From here on chunks are proven one by one: what was read ahead unproven
  // is dropped.
  void StopProving() {
    if (!proving_) return;
    proving_ = false;
    if (chained_) DropAhead();
    chained_ = false;
    next_.reset();
  }

  // The chunk holding byte `at` (< size_).
  size_t ChunkAt(uint64_t at) const {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin() - 1);
  }

  // A link or the final digest did not hold around chunk i (and chunk
  // next, if there is one): their own SHA-256s say which is damaged. A
  // damaged chunk i is the error; an intact chunk i before a damaged next
  // one is handed out, proven alone, and the read goes on chunk by chunk
  // (the next one's error comes with it); two intact chunks mean the
  // manifest does not describe this object.
  Status LinkFailed(size_t i, size_t next) {
    Result<Bytes> mine = Fetch(i, false);
    if (!mine.ok()) return mine.status();
    if (next != SIZE_MAX) {
      Result<Bytes> theirs = Fetch(next, false);
      // Any other failure (the disk, the network) says nothing of which
      // chunk is damaged: it is the read's error, and a read again from
      // the start proves the id as it goes.
      if (!theirs.ok() && !theirs.status().IsCorruption()) return theirs.status();
      if (!theirs.ok()) {
        StopProving();
        cur_ = std::move(*mine);
        cur_index_ = i;
        return Status::OK();
      }
    }
    return Status::Corruption("object " + id_ + ": its content does not match its id (its chunk list is "
                              "damaged, or names the chunks of other content)",
                              id_);
  }

  // Chunk i's chain state at its last block boundary.
  ChainState ZOf(size_t i, const Loaded& l) const {
    if (!l.proven && l.z.valid) return l.z;
    const ChunkLoader::ChainLink link = LinkOf(i);
    ChainState z = link.from;
    if (z.valid) AdvanceChain(&z, l.bytes->data() + link.skip, link.blocks);
    return z;
  }

  // Chunk i, read in order in a whole read of a chained object: handed out
  // only once the links around it hold (the one block it shares with each
  // neighbour included), and the last only once the digest is the id.
  Status EnterChained(size_t i) {
    Loaded cur;
    if (next_ && next_index_ == i) {
      cur = std::move(*next_);
      next_.reset();
    } else {
      Result<Loaded> r = FetchSequential(i);
      if (!r.ok()) return r.status();
      cur = std::move(*r);
    }
    const ChainState z = ZOf(i, cur);
    const uint64_t end = starts_[i] + entries_[i].length;
    if (i + 1 == entries_.size()) {
      if (!final_done_) {
        const uint64_t done = BlockFloor(size_);
        const Digest got = FinishChain(z, done, cur.bytes->data() + (done - starts_[i]), end - done);
        if (got != digest_) return LinkFailed(i, SIZE_MAX);
      }
    } else {
      Result<Loaded> r = FetchSequential(i + 1);
      // The next chunk does not pass its own checks: this one is proven
      // alone, and the error comes when the read reaches the next.
      if (!r.ok()) return r.status().IsCorruption() ? LinkFailed(i, i + 1) : r.status();
      Loaded nxt = std::move(*r);
      const uint64_t tail = BlockFloor(end) - starts_[i];  // where chunk i's last partial block starts
      if (chain_[i + 1].valid) {
        ChainState s = z;
        const size_t head = static_cast<size_t>(BlockCeil(end) - end);
        if (head > 0 || tail < entries_[i].length) {
          uint8_t block[64];
          const size_t from_cur = static_cast<size_t>(entries_[i].length - tail);
          std::memcpy(block, cur.bytes->data() + tail, from_cur);
          std::memcpy(block + from_cur, nxt.bytes->data(), head);
          AdvanceChain(&s, block, 1);
        }
        if (s != chain_[i + 1]) return LinkFailed(i, i + 1);
      } else {
        // The next chunk is the last and holds no block boundary: the
        // final digest covers it and the rest of this one.
        std::string rest(reinterpret_cast<const char*>(cur.bytes->data() + tail), entries_[i].length - tail);
        rest.append(reinterpret_cast<const char*>(nxt.bytes->data()), nxt.bytes->size());
        const Digest got = FinishChain(z, BlockFloor(end), reinterpret_cast<const uint8_t*>(rest.data()), rest.size());
        if (got != digest_) return LinkFailed(i, i + 1);
        final_done_ = true;
      }
      next_ = std::move(nxt);
      next_index_ = i + 1;
    }
    cur_ = std::move(cur.bytes);
    cur_index_ = i;
    proven_next_ = i + 1;
    return Status::OK();
  }

  // Makes chunk i the current one, verified.
  Status Enter(size_t i, bool sequential) {
    // The current chunk, unless a random read left it there and the read
    // in order that reaches it now must take it into the proof.
    if (i == cur_index_ && !(sequential && proving_ && i == proven_next_)) return Status::OK();
    if (!sequential || entries_.size() == 1) {
      Result<Bytes> b = Fetch(i);
      if (!b.ok()) return b.status();
      cur_ = std::move(*b);
      cur_index_ = i;
      return Status::OK();
    }
    if (proving_ && i != proven_next_) StopProving();
    if (chained_) {
      Status s = EnterChained(i);
      if (s.ok() && proving_ && proven_next_ == entries_.size()) id_proven_ = true;
      return s;
    }
    Result<Loaded> r = FetchSequential(i);
    if (!r.ok()) return r.status();
    if (proving_) {
      // A version-1 manifest: the chunks, each proven by its own SHA-256,
      // are hashed in order; the last is handed out once the digest is
      // the object's id.
      whole_->Update(r->bytes->data(), r->bytes->size());
      if (i + 1 == entries_.size() && whole_->Finish() != digest_)
        return Status::Corruption("object " + id_ + ": its content does not match its id (its chunk list is "
                                  "damaged, or names the chunks of other content)",
                                  id_);
      proven_next_ = i + 1;
      if (proven_next_ == entries_.size()) id_proven_ = true;
    }
    cur_ = std::move(r->bytes);
    cur_index_ = i;
    return Status::OK();
  }

  // Makes chunk i the random reads' own, verified by its own SHA-256:
  // ReadAt never moves the cursor's chunk, its read-ahead or its proof, so
  // random reads between sequential ones (another thread's, a page fault
  // elsewhere) take nothing from a read in order.
  Status EnterRandom(size_t i) {
    if (i == rand_index_) return Status::OK();
    Result<Bytes> b = Fetch(i);
    if (!b.ok()) return b.status();
    rand_ = std::move(*b);
    rand_index_ = i;
    return Status::OK();
  }

  Result<size_t> Copy(uint64_t offset, void* buf, size_t n, bool sequential) {
    if (offset >= size_ || n == 0) return size_t{0};
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    auto* out = static_cast<uint8_t*>(buf);
    // A buffer this large is not read back from the caches (StreamCopy).
    const bool far = n >= kStreamCopyMin;
    size_t done = 0;
    while (done < n) {
      const uint64_t at = offset + done;
      const size_t i = ChunkAt(at);
      Status entered = sequential ? Enter(i, true) : EnterRandom(i);
      // Bytes already verified are handed out; the failure comes back on
      // the next call, which starts at the damaged chunk.
      if (!entered.ok()) return done > 0 ? Result<size_t>(done) : Result<size_t>(entered);
      const Bytes& chunk = sequential ? cur_ : rand_;
      const size_t within = static_cast<size_t>(at - starts_[i]);
      const size_t take = std::min(n - done, chunk->size() - within);
      if (far)
        StreamCopy(out + done, chunk->data() + within, take);
      else
        std::memcpy(out + done, chunk->data() + within, take);
      done += take;
    }
    return n;
  }

  std::shared_ptr<void> keep_alive_;
  ChunkLoader* loader_;
  bool disk_;  // ReadSource::disk_cache
  Digest digest_;
  std::string id_;
  uint64_t size_;
  std::vector<ManifestEntry> entries_;
  std::vector<ChainState> chain_;  // one per entry, or none (version 1)
  std::vector<ChunkLocation> locs_;  // LocOf; written under locs_mu_
  mutable std::mutex locs_mu_;
  std::vector<uint64_t> starts_;
  uint64_t pos_ = 0;
  Bytes cur_;
  std::vector<Bytes> held_;  // chunks the views of the last ReadViews call show
  size_t cur_index_ = SIZE_MAX;
  Bytes rand_;  // the chunk of the last ReadAt (EnterRandom)
  size_t rand_index_ = SIZE_MAX;
  // A whole read from the start, in order: the object's id is being
  // proven (chained_: by its chain states, else by whole_).
  bool proving_ = false;
  bool chained_ = false;
  size_t proven_next_ = 0;  // the next chunk to hand out in order
  std::optional<Sha256Stream> whole_;
  std::optional<Loaded> next_;  // chunk next_index_, fetched for the link to it
  size_t next_index_ = SIZE_MAX;
  bool final_done_ = false;  // the digest was checked at the chunk before the last
  bool id_proven_ = false;   // a whole read in order proved the id (IdProven)
  bool keep_ = false;        // sequential reads keep what they check (KeepInCache)
  unsigned depth_ = 1;
  // Chunks a read-ahead run takes before it makes way for a waiting task
  // (Run); the end of its last chunk is hashed alone.
  static constexpr size_t kRunChunks = 16;
  size_t next_in_order_ = SIZE_MAX;  // the chunk FetchSequential takes next when the read goes on in order
  unsigned ramp_ = 0;                // chunks taken in order since the last jump, at most 16
  size_t ahead_end_ = SIZE_MAX;  // chunks at or past this index are not read ahead
  // A chunk read ahead: its index, its result to come, and its share of
  // the read-ahead budget (given back when the entry goes).
  struct Ahead {
    size_t index;
    std::future<Result<Loaded>> loaded;
    ReadAheadShare share;
  };
  std::deque<Ahead> ahead_;
  // Set while DropAhead waits: queued read-ahead tasks then do nothing.
  std::atomic<bool> dropping_{false};
  // Chunks queued for read-ahead runs not yet taken by one (Enqueue), and
  // the runs begun and not yet ended.
  std::mutex run_mu_;
  std::condition_variable run_cv_;
  std::deque<Queued> queued_;
  size_t runs_ = 0;
};

}  // namespace

namespace {

// Verifies an inline object's content and hands it to a reader.
Result<std::unique_ptr<Reader>> InlineReader(const Digest& id, ObjectRow* row) {
  Status s = CheckInline(id, row->size, row->manifest);
  if (!s.ok()) {
    const std::string oid = id.ObjectId();
    return Status::Corruption("object " + oid + ": " + s.message(), oid);
  }
  return std::unique_ptr<Reader>(new InlineObjectReader(id, std::move(row->manifest)));
}

// A manifest's chunk count must be the row's, and a one-chunk object's
// chunk is the object itself (its id is the object's).
Status CheckShape(const Digest& id, uint32_t chunk_count, const std::vector<ManifestEntry>& entries) {
  const std::string oid = id.ObjectId();
  if (entries.size() != chunk_count)
    return Status::Corruption("object " + oid + ": manifest lists " + std::to_string(entries.size()) +
                                  " chunks, the index says " + std::to_string(chunk_count),
                              oid);
  if (entries.size() == 1 && entries[0].id != id)
    return Status::Corruption("object " + oid + ": its one chunk is not the object (chunk " + entries[0].id.Hex() +
                                  "): its chunk list is damaged, or names other content",
                              oid);
  return Status::OK();
}

// Resolves ref and gathers what a reader needs; the index is locked.
Status OpenLocked(Index& index, const std::string& ref, Digest* id, ObjectRow* row, Manifest* manifest,
                  std::vector<ChunkLocation>* locs) {
  Result<Digest> found = ResolveRef(index, ref, row);
  if (!found.ok()) return found.status();
  *id = *found;
  const std::string oid = id->ObjectId();
  if (IsInline(row->size, row->chunk_count)) return Status::OK();  // the caller checks it
  Result<Manifest> decoded = DecodeManifestWithChain(*id, row->size, row->manifest.data(), row->manifest.size());
  if (!decoded.ok())
    return Status::Corruption("object " + oid + ": " + decoded.status().message(), oid);
  CHUNKSTORE_RETURN_IF_ERROR(CheckShape(*id, row->chunk_count, decoded->entries));
  locs->reserve(decoded->entries.size());
  for (const auto& e : decoded->entries) {
    Result<std::optional<ChunkLocation>> loc = index.FindChunk(e.id);
    if (!loc.ok()) return loc.status();
    if (!loc->has_value())
      return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is not in the index", oid,
                                e.id.Hex());
    if ((*loc)->raw_len != e.length)
      return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() +
                                    " has a different length in the index than in the manifest",
                                oid, e.id.Hex());
    locs->push_back(**loc);
  }
  *manifest = std::move(*decoded);
  return Status::OK();
}

}  // namespace

// A full id naming an object of at most one chunk needs one query; any
// other ref needs a read transaction (one snapshot for the ref, the
// manifest and every chunk location).
Result<std::unique_ptr<Reader>> OpenObjectReader(const ReadSource& source, Index& index, const std::string& ref,
                                                 bool in_read) {
  ObjectRow row;
  std::vector<ChunkLocation> locs;
  Manifest manifest;
  Digest id;
  std::optional<Digest> full;
  if (ref.size() == 71 && ref.rfind("sha256:", 0) == 0) full = Digest::FromHex(std::string_view(ref).substr(7));
  else if (ref.size() == 64) full = Digest::FromHex(ref);
  if (full) {
    auto found = index.FindObjectAndFirstChunk(*full);
    if (!found.ok()) return found.status();
    // One query is enough when the object has at most one chunk and the
    // query found it; otherwise the general path below looks it up.
    if (found->has_value() && (*found)->first.chunk_count <= 1 &&
        ((*found)->first.chunk_count == 0 || (*found)->second)) {
      row = std::move((*found)->first);
      id = *full;
      if (IsInline(row.size, row.chunk_count)) return InlineReader(id, &row);
      const std::string oid = id.ObjectId();
      Result<Manifest> decoded = DecodeManifestWithChain(id, row.size, row.manifest.data(), row.manifest.size());
      if (!decoded.ok())
        return Status::Corruption("object " + oid + ": " + decoded.status().message(), oid);
      CHUNKSTORE_RETURN_IF_ERROR(CheckShape(id, row.chunk_count, decoded->entries));
      if (!decoded->entries.empty()) {
        const ManifestEntry& e = decoded->entries.front();
        if (!(*found)->second)
          return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() + " is not in the index", oid,
                                    e.id.Hex());
        if ((*found)->second->raw_len != e.length)
          return Status::Corruption("object " + oid + ": chunk " + e.id.Hex() +
                                        " has a different length in the index than in the manifest",
                                    oid, e.id.Hex());
        locs.push_back(*(*found)->second);
      }
      return std::unique_ptr<Reader>(new ObjectReader(source, id, row.size, std::move(*decoded), std::move(locs)));
    }
  }
  Status s;
  if (in_read) {
    s = OpenLocked(index, ref, &id, &row, &manifest, &locs);
  } else {
    ReadTxn txn(&index);
    CHUNKSTORE_RETURN_IF_ERROR(txn.status());
    s = OpenLocked(index, ref, &id, &row, &manifest, &locs);
  }
  CHUNKSTORE_RETURN_IF_ERROR(s);
  if (IsInline(row.size, row.chunk_count)) return InlineReader(id, &row);
  return std::unique_ptr<Reader>(new ObjectReader(source, id, row.size, std::move(manifest), std::move(locs)));
}

}  // namespace chunkstore::internal

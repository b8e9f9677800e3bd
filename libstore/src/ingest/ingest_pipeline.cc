// SPDX-License-Identifier: Apache-2.0
// The threaded ingest pipeline (see ingest.h for the thread layout).
//
// Sources that already sit in memory are chunked in place; others are read
// in kReadBlock pieces straight into the current chunk's slot. When a cut
// falls inside a block, only that block's tail is carried to the next
// slot, so a byte is copied once on its way in and, for at most one block
// per chunk, once more.
#include <sys/mman.h>

#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "ingest/ingest_pipeline.h"
#include "base/buffer.h"
#include "hash/sha256_pair.h"

namespace chunkstore::internal {

namespace {

// Two threads do all the work on two cores, with no thread waiting while
// work is left. The producer cuts chunks. Three kinds of work follow, each
// taken by whichever thread is free (CutPhaseWork): the object hash's next
// step (ObjectStep: one chunk, in order, one thread at a time), which
// hashes that chunk's own id in the same pass (the object hash's chain is
// the one serial part, so it goes first, and pairing it with the chunk it
// covers costs its core little); handing the oldest hashed chunk to the
// sink (AcceptNext: in order, one thread at a time); and, when neither is
// there to do, hashing the newest unhashed chunks two at a time
// (Sha256Pair), which lets the object hash run alone and faster where the
// rest is little work (prepare). The producer, when the ring is full,
// hands chunks on before it takes object steps: it is the only one that
// can cut. Beyond two cores, extra workers take the oldest unhashed
// chunks.
//
// Given an expected chunk list (an earlier version of the input), a first
// phase skips the chunker: the producer reads at the expected cut points,
// each chunk is checked against its expected id, and the consumer stops at
// the first that differs. Every chunk before the one before it is what
// cutting would have given (the chunker decides a cut from the chunk's
// bytes and the one byte after it, all of which matched), so a second,
// ordinary phase cuts the rest from there. The object hash only ever sees
// bytes whose chunk was hashed from the same buffer.
class Pipeline {
 public:
  Pipeline(Source& source, const IngestConfig& cfg, IngestSink* sink)
      : source_(source), cfg_(cfg), sink_(sink), slots_(2 * cfg.threads + 4) {}

  // expected: see IngestConfig; the caller has checked that the source
  // can be re-read from any offset.
  Result<IngestOutcome> Run(const std::vector<ManifestEntry>* expected) {
    if (expected) {
      expected_ = expected;
      CHUNKSTORE_RETURN_IF_ERROR(RunPhase());
      if (!diverged_) {
        out_.object_id = object_hash_.Finish();
        out_.chain = std::move(object_hash_.chain());
        return out_;
      }
      // Everything before out_.size matched and is accepted (and in the
      // object hash); cut the rest from there, as a chunk starts there.
      if (!source_.Whole() && !source_.Rewind(out_.size))
        return Status::IOError("cannot read " + source_.Describe() + " again");
      expected_ = nullptr;
      produced_ = consumed_ = object_next_ = 0;
      producer_done_ = stop_ = diverged_ = false;
    }
    CHUNKSTORE_RETURN_IF_ERROR(RunPhase());
    out_.object_id = object_hash_.Finish();
    out_.chain = std::move(object_hash_.chain());
    return out_;
  }

 private:
  enum class Hash { kTodo, kRunning, kDone };
  struct Slot {
    // Filled once per chunk it carries, up to the chunk maximum: on huge
    // pages (AllocateChunkMemory), a fresh process's first chunks do not
    // pay a page fault per 4 KiB of them.
    ChunkMemory buf;
    IngestedChunk chunk;
    Hash hash = Hash::kTodo;
    const Digest* expect = nullptr;  // the id this chunk should have
    bool differs = false;            // it has another id, or the input ended early
  };

  Status RunPhase() {
    const unsigned workers = cfg_.threads > 2 ? cfg_.threads - 2 : 0;
    const uint64_t start = out_.size;
    side_ = UINT64_MAX;
    std::vector<std::thread> threads;
    threads.emplace_back([this] {
      if (expected_) ConsumeChecked();
      else CutPhaseWork();
    });
    for (unsigned i = 0; i < workers; ++i) threads.emplace_back([this] { Work(); });
    Status s = expected_ ? ProduceExpected() : Produce(start);
    {
      std::lock_guard<std::mutex> l(mu_);
      producer_done_ = true;
      if (!s.ok()) Fail(s);
    }
    cv_.notify_all();
    if (!expected_) CutPhaseWork();  // the last chunks' work, beside the consumer
    for (auto& t : threads) t.join();
    return error_;
  }

  void AfterHash(Slot& s) {
    const bool stays_raw = s.chunk.whole_input && s.chunk.length <= cfg_.inline_max;
    s.differs = !ProcessHashed(s.chunk, stays_raw ? Compression::None() : cfg_.compress, sink_, s.expect);
  }

  // Hashes one chunk, or two together (Sha256Pair: 1.2-1.9x the bytes per
  // second of one at a time, by core: sha256_pair.h).
  void Process(Slot& a, Slot* b) {
    if (b == nullptr) {
      a.chunk.id = Sha256::Of(a.chunk.data, a.chunk.length);
    } else {
      Sha256Pair(a.chunk.data, a.chunk.length, &a.chunk.id, b->chunk.data, b->chunk.length,
                 &b->chunk.id);
      AfterHash(*b);
    }
    AfterHash(a);
  }

  // A slot that held an unusually large chunk gives back the pages above
  // twice the average size, so resident memory stays flat however many
  // chunks pass through (with more chunks, every slot would otherwise end
  // up having held one near the maximum).
  void ReleaseTail(Slot& s) {
    const size_t keep = (2 * static_cast<size_t>(cfg_.chunking.avg_size) + 4095) & ~size_t{4095};
    if (!s.buf || s.chunk.length <= keep) return;
    const uintptr_t start = (reinterpret_cast<uintptr_t>(s.buf.get()) + keep + 4095) & ~uintptr_t{4095};
    // Whole pages inside the buffer only: madvise rounds the length up, and
    // a page shared with another allocation must never be dropped.
    const uintptr_t end = (reinterpret_cast<uintptr_t>(s.buf.get()) + s.chunk.length) & ~uintptr_t{4095};
    if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
  }

  void Fail(const Status& s) {  // mu_ held
    if (error_.ok()) error_ = s;
    stop_ = true;
  }

  Slot& At(uint64_t k) { return slots_[k % slots_.size()]; }

  // An unhashed chunk in the ring, newest or oldest first, marked as
  // running; UINT64_MAX if there is none. mu_ held.
  uint64_t Claim(bool newest) {
    for (uint64_t n = consumed_; n < produced_; ++n) {
      const uint64_t k = newest ? produced_ - 1 - (n - consumed_) : n;
      if (At(k).hash == Hash::kTodo) {
        At(k).hash = Hash::kRunning;
        return k;
      }
    }
    return UINT64_MAX;
  }

  // Hashes chunk k and, unless it is UINT64_MAX, chunk k2 (both claimed
  // by the caller) with mu_ released.
  void HashClaimed(std::unique_lock<std::mutex>& l, uint64_t k, uint64_t k2 = UINT64_MAX) {
    l.unlock();
    Process(At(k), k2 == UINT64_MAX ? nullptr : &At(k2));
    l.lock();
    At(k).hash = Hash::kDone;
    if (k2 != UINT64_MAX) At(k2).hash = Hash::kDone;
    cv_.notify_all();
  }

  // Unhashed chunks in the ring. mu_ held.
  size_t Unhashed() {
    size_t n = 0;
    for (uint64_t k = consumed_; k < produced_; ++k) n += At(k).hash == Hash::kTodo;
    return n;
  }

  // Slots below this index may be reused: handed to the sink, and taken
  // into the object hash. mu_ held.
  uint64_t Released() const {
    return expected_ ? consumed_ : std::min(consumed_, object_next_);
  }

  // Hashes the newest unhashed chunks, two at a time (the oldest, which
  // the object hash reaches next, are left to be hashed in its pass);
  // false if there are none. mu_ held.
  bool HashNewest(std::unique_lock<std::mutex>& l) {
    const uint64_t job = Claim(true);
    if (job == UINT64_MAX) return false;
    HashClaimed(l, job, Claim(true));
    return true;
  }

  // The object hash's next step, if the chunk is there and nobody is
  // taking one; false otherwise. Cut phase only. mu_ held.
  bool TakeObjectStep(std::unique_lock<std::mutex>& l) {
    if (object_busy_ || object_next_ >= produced_) return false;
    ObjectStep(l);
    return true;
  }

  // Hands the oldest chunk not yet handed on to the sink, if it is hashed
  // and nobody is handing one on; false otherwise. Cut phase only: a
  // checking phase holds a chunk back (ConsumeChecked). mu_ held.
  bool AcceptNext(std::unique_lock<std::mutex>& l) {
    if (accept_busy_ || consumed_ >= produced_ || At(consumed_).hash != Hash::kDone) return false;
    accept_busy_ = true;
    const uint64_t k = consumed_;
    l.unlock();
    Finish(k);
    l.lock();
    accept_busy_ = false;
    cv_.notify_all();  // a thread may have found the next chunk's hand-on taken
    return true;
  }

  // Does the cut phase's work until every chunk produced is handed on and
  // in the object hash (or the pipeline stops). Run by the consumer, and
  // by the producer once the input is cut.
  void CutPhaseWork() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (stop_) return;
      if (producer_done_ && consumed_ == produced_ && object_next_ == produced_) return;
      if (!TakeObjectStep(l) && !AcceptNext(l) && !HashNewest(l)) cv_.wait(l);
    }
  }

  // Waits for a free slot, working meanwhile; nullptr when the pipeline
  // is stopping. While checking, hashing starts one slot early when that
  // makes a pair: with the last slot free and one chunk unhashed, reading
  // the next chunk first lets the two be hashed together.
  Slot* AcquireSlot(uint64_t k) {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (stop_) return nullptr;
      const uint64_t free = Released() + slots_.size() - k;  // k's slot included
      if (expected_) {
        if (free >= 2 || (free == 1 && Unhashed() < 2)) break;
        if (!HashNewest(l)) cv_.wait(l);
      } else {
        if (free >= 1) break;
        if (!AcceptNext(l) && !TakeObjectStep(l) && !HashNewest(l)) cv_.wait(l);
      }
    }
    Slot& s = At(k);
    ReleaseTail(s);
    s.hash = Hash::kTodo;
    s.expect = nullptr;
    s.differs = false;
    return &s;
  }

  void Publish() {
    {
      std::lock_guard<std::mutex> l(mu_);
      ++produced_;
    }
    cv_.notify_all();
  }

  // Cuts the input from `offset` on (the source is positioned there).
  Status Produce(uint64_t offset) {
    Chunker chunker(cfg_.chunking);
    if (const uint8_t* whole = source_.Whole()) {
      const size_t n = static_cast<size_t>(*source_.Size());
      while (offset < n) {
        const size_t len = chunker.Next(whole + offset, n - offset, true);
        Slot* s = AcquireSlot(produced_);
        if (s == nullptr) return Status::OK();
        s->chunk.offset = offset;
        s->chunk.length = static_cast<uint32_t>(len);
        s->chunk.data = whole + offset;
        s->chunk.whole_input = len == n;
        Publish();
        offset += len;
      }
      return Status::OK();
    }
    const size_t max = cfg_.chunking.max_size;
    std::unique_ptr<uint8_t[]> carry(new uint8_t[kReadBlock]);
    size_t carried = 0;
    bool eof = false;
    while (!(eof && carried == 0)) {
      Slot* s = AcquireSlot(produced_);
      if (s == nullptr) return Status::OK();
      if (!s->buf) s->buf = AllocateChunkMemory(max);
      uint8_t* buf = s->buf.get();
      std::memcpy(buf, carry.get(), carried);
      size_t filled = carried;
      carried = 0;
      size_t len = chunker.Next(buf, filled, eof);
      while (len == 0) {
        Result<size_t> r = Fill(source_, buf + filled, std::min(kReadBlock, max - filled), &eof);
        if (!r.ok()) return r.status();
        filled += *r;
        if (filled == 0) break;  // empty input
        len = chunker.Next(buf, filled, eof);
      }
      if (filled == 0) break;
      carried = filled - len;
      std::memcpy(carry.get(), buf + len, carried);
      s->chunk.offset = offset;
      s->chunk.length = static_cast<uint32_t>(len);
      s->chunk.data = buf;
      s->chunk.whole_input = offset == 0 && eof && carried == 0;
      offset += len;
      Publish();
    }
    return Status::OK();
  }

  // Reads the input at the expected cut points, and stops after a chunk
  // that cannot match (the input ended early, or goes on past the last).
  Status ProduceExpected() {
    const std::vector<ManifestEntry>& e = *expected_;
    const uint8_t* whole = source_.Whole();
    const uint64_t n = whole ? *source_.Size() : 0;
    uint64_t offset = 0;
    for (size_t i = 0; i < e.size(); ++i) {
      const size_t len = e[i].length;
      const bool last = i + 1 == e.size();
      Slot* s = AcquireSlot(produced_);
      if (s == nullptr) return Status::OK();
      size_t got;
      bool differs;
      if (whole) {
        got = static_cast<size_t>(std::min<uint64_t>(len, n - offset));
        s->chunk.data = whole + offset;
        differs = got < len || (last && offset + len != n);
      } else {
        if (!s->buf) s->buf = AllocateChunkMemory(cfg_.chunking.max_size);
        bool eof = false;
        Result<size_t> r = Fill(source_, s->buf.get(), len, &eof);
        if (!r.ok()) return r.status();
        got = *r;
        differs = got < len;
        if (last && !differs) {  // the last cut is the input's end: it must end here
          uint8_t probe;
          Result<size_t> more = Fill(source_, &probe, 1, &eof);
          if (!more.ok()) return more.status();
          differs = *more != 0;
        }
        s->chunk.data = s->buf.get();
      }
      s->chunk.offset = offset;
      s->chunk.length = static_cast<uint32_t>(got);
      s->chunk.whole_input = false;  // inputs checked this way are >= 1 MiB
      s->expect = &e[i].id;
      if (differs) {
        s->differs = true;
        s->hash = Hash::kDone;  // nobody needs to hash it
        Publish();
        return Status::OK();
      }
      Publish();
      offset += len;
    }
    return Status::OK();
  }

  void Work() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (stop_) return;
      const uint64_t job = Claim(false);
      if (job != UINT64_MAX) HashClaimed(l, job, Claim(false));
      else if (producer_done_) return;
      else cv_.wait(l);
    }
  }

  // Hands chunk k to the sink and frees its slot; false on failure.
  bool Finish(uint64_t k) {
    Slot& s = At(k);
    // While checking, only the consumer feeds the object hash (here, once
    // a chunk is confirmed), so it owns side_ throughout the phase.
    if (s.expect) ObjectHashAlongside(k);
    Status st = sink_->Accept(s.chunk);
    out_.size += s.chunk.length;
    ++out_.chunks;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (!st.ok()) Fail(st);
      ++consumed_;
    }
    cv_.notify_all();
    return st.ok();
  }

  // Takes chunk object_next_ into the object hash (the caller saw it
  // produced and nobody feeding the object hash); mu_ is released
  // meanwhile. Cut phase only.
  void ObjectStep(std::unique_lock<std::mutex>& l) {
    const uint64_t k = object_next_;
    object_busy_ = true;
    l.unlock();
    ObjectHashAlongside(k);
    l.lock();
    object_busy_ = false;
    ++object_next_;
    cv_.notify_all();
  }

  // Takes chunk k into the object hash. The pass is shared with chunk
  // hashes nobody has started (Sha256Stream::UpdateAlongside): k's own if
  // it is unhashed, else the oldest; one left unfinished at the end of k
  // goes on alongside the next step, and is finished at the latest by the
  // step over its own chunk. Run alone, the object hash would leave half
  // of its core's SHA unit idle.
  void ObjectHashAlongside(uint64_t k) {
    const uint8_t* p = At(k).chunk.data;
    size_t left = At(k).chunk.length;
    object_hash_.MarkChunk();
    while (left > 0) {
      if (side_ == UINT64_MAX) {
        {
          std::lock_guard<std::mutex> l(mu_);
          // Everything waits for the object hash: take k's own hash along
          // (if nobody has taken it), and another chunk's only where that
          // does not slow the object hash down.
          if (pair_keeps_speed_ || At(k).hash == Hash::kTodo) side_ = Claim(false);
        }
        if (side_ == UINT64_MAX) break;
        side_hash_.Start(At(side_).chunk.data, At(side_).chunk.length);
      }
      const size_t used = object_hash_.UpdateAlongside(p, left, side_hash_);
      p += used;
      left -= used;
      if (!side_hash_.HasBlocks()) FinishSide();
    }
    object_hash_.Update(p, left);
    // k's own hash may still have a block to go (the stream was mid-block,
    // or does not interleave): k is the next to be handed on.
    if (side_ == k) FinishSide();
  }

  void FinishSide() {
    Slot& s = At(side_);
    s.chunk.id = side_hash_.Finish();
    AfterHash(s);
    {
      std::lock_guard<std::mutex> l(mu_);
      s.hash = Hash::kDone;
    }
    cv_.notify_all();
    side_ = UINT64_MAX;
  }

  // The consumer of a checking phase: hands chunks to the sink in order,
  // each held back until the next one matches too: the chunker cuts by the
  // byte after the cut (the next chunk's first), so a chunk's cut is only
  // known to be the chunker's once that byte is. The end of the input
  // confirms the last. A chunk is hashed before it is confirmed and enters
  // the object hash when handed on (Finish): one that differs must not
  // reach it.
  void ConsumeChecked() {
    for (uint64_t k = 0;; ++k) {
      bool have;
      {
        std::unique_lock<std::mutex> l(mu_);
        while (!stop_ && produced_ <= k && !producer_done_) {
          if (!HashNewest(l)) cv_.wait(l);
        }
        if (stop_) return;
        have = produced_ > k;
      }
      if (!have) {
        if (k > 0) Finish(k - 1);
        return;
      }
      Slot& s = At(k);
      {
        std::unique_lock<std::mutex> l(mu_);
        for (;;) {
          if (stop_) return;
          if (s.hash == Hash::kDone) break;
          if (s.hash == Hash::kTodo) {
            s.hash = Hash::kRunning;
            HashClaimed(l, k);
          } else if (side_ == k) {
            // Taken along by an earlier chunk's object step: the rest of
            // it is this thread's to do.
            l.unlock();
            FinishSide();
            l.lock();
          } else if (!HashNewest(l)) {
            cv_.wait(l);
          }
        }
        if (s.differs) {  // cut again from the chunk held back (or this one)
          diverged_ = true;
          stop_ = true;
          cv_.notify_all();
          return;
        }
      }
      if (k > 0 && !Finish(k - 1)) return;
    }
  }

  Source& source_;
  const IngestConfig& cfg_;
  IngestSink* sink_;
  std::vector<Slot> slots_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t produced_ = 0, consumed_ = 0;
  bool producer_done_ = false, stop_ = false;
  const std::vector<ManifestEntry>* expected_ = nullptr;
  bool diverged_ = false;  // a chunk differed from expected_ (not an error)
  bool accept_busy_ = false;  // a thread is handing a chunk on (cut phase)
  Status error_;
  Sha256Stream object_hash_;
  const bool pair_keeps_speed_ = object_hash_.Interleaves() && Sha256PairKeepsSpeed();
  // The object hash's next chunk, and whether a thread is feeding it (the
  // object hash, side_ and side_hash_ belong to that thread meanwhile).
  uint64_t object_next_ = 0;
  bool object_busy_ = false;
  uint64_t side_ = UINT64_MAX;  // the chunk hashed alongside the object hash, if any
  Sha256Partial side_hash_;
  IngestOutcome out_;
};

}  // namespace

Result<IngestOutcome> RunPipeline(Source& source, const IngestConfig& cfg, IngestSink* sink,
                                  const std::vector<ManifestEntry>* expected) {
  Pipeline p(source, cfg, sink);
  return p.Run(expected);
}

}  // namespace chunkstore::internal

// SPDX-License-Identifier: Apache-2.0
// Batch::Impl: a batch's publish session and what wraps its sources
// (progress, cancellation, files read ahead). Internal; shared by store.cc
// and the tree publisher (tree/).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chunkstore/store.h"
#include "ingest/file_prefetch.h"
#include "ingest/source.h"
#include "store/store_impl.h"
#include "write/publish_session.h"

namespace chunkstore {

namespace internal {

// Reports bytes read to a progress callback, at most every 256 KiB.
class ProgressSource final : public Source {
 public:
  ProgressSource(Source& in, const std::function<void(uint64_t)>& fn, uint64_t* total)
      : in_(in), fn_(fn), total_(total), start_(*total) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override {
    Result<size_t> r = in_.Read(buf, n);
    if (r.ok()) {
      *total_ += *r;
      // After a rewind the count drops back and climbs again: report
      // nothing until it passes what was reported, so it never goes back.
      if (*total_ >= reported_ + (256u << 10) || (*r == 0 && *total_ >= reported_)) {
        reported_ = *total_;
        fn_(*total_);
      }
    }
    return r;
  }
  const uint8_t* Whole() const override { return nullptr; }
  std::optional<uint64_t> Size() const override { return in_.Size(); }
  std::string Describe() const override { return in_.Describe(); }
  // Bytes read again after a rewind are counted once.
  bool Rewind(uint64_t offset) override {
    if (!in_.Rewind(offset)) return false;
    *total_ = start_ + offset;
    return true;
  }

 private:
  Source& in_;
  const std::function<void(uint64_t)>& fn_;
  uint64_t* total_;
  uint64_t start_;
  uint64_t reported_ = 0;
};

// Fails the read in progress once a batch is cancelled.
class CancelSource final : public Source {
 public:
  CancelSource(Source& in, const std::atomic<bool>* cancelled) : in_(in), cancelled_(cancelled) {}
  Result<size_t> Read(uint8_t* buf, size_t n) override {
    if (cancelled_->load(std::memory_order_relaxed)) return Status::IOError("interrupted");
    return in_.Read(buf, n);
  }
  const uint8_t* Whole() const override { return in_.Whole(); }  // in memory already: nothing to wait for
  std::optional<uint64_t> Size() const override { return in_.Size(); }
  std::string Describe() const override { return in_.Describe(); }
  bool Rewind(uint64_t offset) override { return in_.Rewind(offset); }

 private:
  Source& in_;
  const std::atomic<bool>* cancelled_;
};

}  // namespace internal

struct Batch::Impl {
  explicit Impl(Store::Impl* s) : store(s), session(s->publish_target()) {}
  Store::Impl* store;
  internal::PublishSession session;
  // What the stat cache learns from the trees added, recorded once the
  // batch is committed (never before: it would vouch for objects that may
  // never be stored).
  std::vector<internal::Index::StatEntry> stat_updates;
  // Each tree added: the first of its results in the session and its
  // root's (the last), whose new_bytes Commit makes the tree's total.
  std::vector<std::pair<size_t, size_t>> trees;
  bool failed = false;
  std::function<void(uint64_t)> progress;
  uint64_t progress_total = 0;
  const std::atomic<bool>* cancelled = nullptr;
  std::unique_ptr<internal::FilePrefetcher> prefetch;

  bool Cancelled() const { return cancelled && cancelled->load(std::memory_order_relaxed); }

  Result<PublishResult> Add(internal::Source& src_in, const std::string& name, const internal::ObjectRole& role = {}) {
    if (failed) return Status::InvalidArgument("the batch already failed or was committed");
    if (Cancelled()) {
      failed = true;
      return Status::IOError("interrupted");
    }
    std::optional<internal::CancelSource> guarded;
    if (cancelled) guarded.emplace(src_in, cancelled);
    internal::Source& src_c = guarded ? static_cast<internal::Source&>(*guarded) : src_in;
    std::optional<internal::ProgressSource> counted;
    if (progress) counted.emplace(src_c, progress, &progress_total);
    internal::Source& src = counted ? static_cast<internal::Source&>(*counted) : src_c;
    Result<PublishResult> r = session.AddSource(src, name, role);
    if (!r.ok()) failed = true;
    return r;
  }
  // A file, read ahead by the prefetcher when it is the next one Prefetch
  // listed.
  Result<PublishResult> AddFile(const std::string& path, const std::string& name, const internal::ObjectRole& role) {
    if (prefetch) {
      std::optional<internal::FilePrefetcher::Item> item = prefetch->Take(path);
      if (!item) {
        prefetch.reset();
      } else if (!item->status.ok()) {
        return item->status;  // as below: a bad input does not spoil the batch
      } else if (item->read) {
        internal::BytesSource src(item->bytes.data(), item->bytes.size(), path);
        return Add(src, name, role);
      } else if (item->file) {
        return Add(*item->file, name, role);
      }
    }
    Result<std::unique_ptr<internal::FileSource>> src = internal::FileSource::Open(path);
    if (!src.ok()) return src.status();  // a missing input does not spoil the batch
    return Add(**src, name, role);
  }
};

}  // namespace chunkstore

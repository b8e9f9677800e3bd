// SPDX-License-Identifier: Apache-2.0
// A fixed set of worker threads running submitted tasks in order of
// submission. Readers use one per store for read-ahead, so verifying the
// next chunks costs a queue push instead of a thread start per chunk.
//
// Thread safety: Submit may be called from any thread. The destructor
// waits for queued tasks to finish; tasks must not destroy the pool.
#ifndef CHUNKSTORE_TASK_POOL_H_
#define CHUNKSTORE_TASK_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace chunkstore::internal {

class TaskPool {
 public:
  // Threads start with the first Submit, so stores that never read ahead
  // never start any. background: the workers run as SCHED_BATCH (Linux),
  // for work that feeds one consuming thread which should not wait on it:
  // a worker waking with a finished task does not preempt a running
  // thread, so the consumer (a reader copying verified chunks out, often
  // the pipeline's serial part) keeps its core. Their share of the CPU
  // under contention is unchanged (same nice value).
  explicit TaskPool(unsigned threads, bool background = false)
      : size_(threads ? threads : 1), background_(background) {}
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Whether a submitted task is waiting for a worker: a long task can make
  // way for it, and go on while nothing waits.
  bool HasWaiting();

  // Runs fn on a worker; the future yields its result.
  template <typename Fn>
  auto Submit(Fn fn) -> std::future<decltype(fn())> {
    using R = decltype(fn());
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> f = task->get_future();
    Push([task] { (*task)(); });
    return f;
  }

 private:
  void Push(std::function<void()> job);
  void Work();

  const unsigned size_;
  const bool background_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace chunkstore::internal

#endif  // CHUNKSTORE_TASK_POOL_H_

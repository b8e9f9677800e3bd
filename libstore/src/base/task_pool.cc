// SPDX-License-Identifier: Apache-2.0
// Worker threads of TaskPool (see task_pool.h).
#include "base/task_pool.h"

#include <pthread.h>
#include <sched.h>

namespace chunkstore::internal {

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void TaskPool::Push(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_.push_back(std::move(job));
    if (threads_.size() < size_) threads_.emplace_back([this] { Work(); });
  }
  cv_.notify_one();
}

bool TaskPool::HasWaiting() {
  std::lock_guard<std::mutex> l(mu_);
  return !jobs_.empty();
}

void TaskPool::Work() {
#ifdef SCHED_BATCH
  if (background_) {
    // Best effort: where the policy cannot be set the pool works as any.
    sched_param param{};
    param.sched_priority = 0;
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
  }
#endif
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !jobs_.empty(); });
      // Queued jobs still run when stopping: their futures are waited on.
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace chunkstore::internal

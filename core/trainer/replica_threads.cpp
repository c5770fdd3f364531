// Replica threads with a join bounded after a failure (see replica_threads.h).
#include "trainer/replica_threads.h"

#include <chrono>

#include <fmt/format.h>

namespace mb {

ReplicaThreads::ReplicaThreads(int count)
    : threads_(static_cast<std::size_t>(count)),
      started_(static_cast<std::size_t>(count), 0),
      done_(static_cast<std::size_t>(count), 0) {}

ReplicaThreads::~ReplicaThreads() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void ReplicaThreads::start(int index, std::function<void()> fn) {
  const std::size_t i = static_cast<std::size_t>(index);
  threads_.at(i) = std::thread([this, i, fn = std::move(fn)] {
    try {
      fn();
    } catch (...) {
      // fn reports its own failures; anything else must not reach std::terminate.
    }
    {
      std::lock_guard lock(mutex_);
      done_[i] = 1;
    }
    ended_.notify_all();
  });
  std::lock_guard lock(mutex_);
  started_[i] = 1;
}

void ReplicaThreads::join(const std::function<bool()>& failed, double grace_s,
                          const std::function<void(const std::vector<int>&)>& on_stuck) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point failed_at{};
  bool reported = false;
  std::unique_lock lock(mutex_);
  for (;;) {
    std::vector<int> running;
    for (std::size_t i = 0; i < threads_.size(); ++i)
      if (started_[i] && !done_[i]) running.push_back(static_cast<int>(i));
    if (running.empty()) break;
    ended_.wait_for(lock, std::chrono::milliseconds(50));
    if (reported) continue;
    lock.unlock();
    const bool has_failed = failed();
    lock.lock();
    if (!has_failed) continue;
    const auto now = Clock::now();
    if (failed_at == Clock::time_point{}) failed_at = now;
    if (std::chrono::duration<double>(now - failed_at).count() < grace_s) continue;
    running.clear();
    for (std::size_t i = 0; i < threads_.size(); ++i)
      if (started_[i] && !done_[i]) running.push_back(static_cast<int>(i));
    if (running.empty()) break;
    reported = true;
    lock.unlock();
    if (on_stuck) on_stuck(running);
    lock.lock();
  }
  lock.unlock();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

std::string stuck_threads_message(const std::vector<int>& ranks, double grace_s) {
  std::string who;
  for (int r : ranks) who += fmt::format("{}{}", who.empty() ? "" : ", ", r);
  return fmt::format(
      "replica{} {} did not end within {:g} s after the run failed: stuck inside the device driver "
      "(or a library call), which cannot be interrupted; the process must be restarted",
      ranks.size() == 1 ? "" : "s", who, grace_s);
}

}  // namespace mb

// A reusable barrier for a fixed set of threads that spins briefly (replica steps are
// milliseconds apart, so a sleep would cost more than the wait) and then blocks, that can be
// aborted (when one replica fails, the others must not wait forever) and that has a timeout
// (when one replica is stuck without failing, the others must not wait forever either).
#pragma once
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

namespace mb {

class BarrierAborted : public std::exception {
 public:
  const char* what() const noexcept override { return "another replica failed"; }
};

// A party waited longer than the barrier's timeout for the others to arrive. The barrier is
// aborted first (the party that gave up would otherwise be counted in a generation it left),
// so every other waiter gets BarrierAborted. Callers turn it into a message naming who is late.
class BarrierTimeout : public std::exception {
 public:
  explicit BarrierTimeout(double seconds) : seconds_(seconds) {}
  const char* what() const noexcept override { return "a barrier wait outlived its timeout"; }
  double seconds() const { return seconds_; }

 private:
  double seconds_;
};

class SpinBarrier {
 public:
  // timeout_s: how long a party waits for the others (infinite: no limit). spin_s: how long
  // it spins before it blocks. Waking a blocked thread costs tens of microseconds on every
  // such wait, so parties that each own a CPU spin for about a step's usual imbalance; where
  // parties share CPUs, a spinning one would take the CPU from the party it waits for, so
  // they spin briefly (kShortSpinS).
  static constexpr double kShortSpinS = 20e-6;
  explicit SpinBarrier(int parties, double timeout_s = std::numeric_limits<double>::infinity(),
                       double spin_s = kShortSpinS)
      : parties_(parties), timeout_s_(timeout_s),
        spin_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spin_s))) {}

  // Blocks until all parties arrived. The last to arrive runs `on_complete` (if any)
  // before anyone is released; if it throws, the barrier is aborted (the others would
  // otherwise wait for a generation that never comes) and the exception propagates.
  // Throws BarrierAborted once abort() was called, BarrierTimeout when the others did not
  // all arrive within the timeout. A slow `on_complete` does not time the others out: every
  // party has arrived, and the completion (a link collective) has a deadline of its own.
  void arrive_and_wait(const std::function<void()>& on_complete = {}) {
    if (aborted_.load(std::memory_order_acquire)) throw BarrierAborted();
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      completing_.store(true, std::memory_order_release);   // before the count resets: waiters see one or the other
      arrived_.store(0, std::memory_order_relaxed);
      if (on_complete) {
        try {
          on_complete();
        } catch (...) {
          abort();
          throw;
        }
      }
      release(gen + 1);
      return;
    }
    // The clock is read every 64 pauses (a few microseconds): the spin lasts spin_ on any CPU.
    for (const auto until = Clock::now() + spin_; Clock::now() < until;)
      for (int k = 0; k < 64; ++k) {
        if (generation_.load(std::memory_order_acquire) != gen) return finish_wait();
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
      }
    block(gen);
    finish_wait();
  }

  // Releases every waiter with BarrierAborted, now and in future waits.
  void abort() {
    {
      std::lock_guard lock(mutex_);
      abort_locked();
    }
    cv_.notify_all();
  }

  double timeout_s() const { return timeout_s_; }

 private:
  using Clock = std::chrono::steady_clock;

  void finish_wait() const {
    if (aborted_.load(std::memory_order_acquire)) throw BarrierAborted();
  }

  // The generation changes under the mutex (release, abort), and a waiter checks it under
  // the mutex before sleeping: no wake-up is lost.
  void release(uint32_t next) {
    {
      std::lock_guard lock(mutex_);
      completing_.store(false, std::memory_order_release);
      generation_.store(next, std::memory_order_release);
    }
    cv_.notify_all();
  }

  void abort_locked() {
    aborted_.store(true, std::memory_order_release);
    completing_.store(false, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }

  void block(uint32_t gen) {
    const bool limited = std::isfinite(timeout_s_) && timeout_s_ > 0;
    const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limited ? timeout_s_ : 0));
    auto deadline = Clock::now() + timeout;
    std::unique_lock lock(mutex_);
    while (generation_.load(std::memory_order_acquire) == gen) {
      if (!limited) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, deadline) != std::cv_status::timeout) continue;
      if (generation_.load(std::memory_order_acquire) != gen) break;
      if (completing_.load(std::memory_order_acquire)) {
        deadline = Clock::now() + timeout;   // everyone is here; the completion has its own deadline
        continue;
      }
      abort_locked();   // under the lock: a release cannot slip in between the check and the abort
      lock.unlock();
      cv_.notify_all();
      throw BarrierTimeout(timeout_s_);
    }
  }

  const int parties_;
  const double timeout_s_;
  const Clock::duration spin_;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> aborted_{false}, completing_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace mb

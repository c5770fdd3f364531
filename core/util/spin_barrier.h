// A reusable barrier for a fixed set of threads that spins briefly (replica steps are
// milliseconds apart, so a futex sleep would cost more than the wait) and then blocks,
// and that can be aborted: when one replica fails, the others must not wait forever.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace mb {

class BarrierAborted : public std::exception {
 public:
  const char* what() const noexcept override { return "another replica failed"; }
};

class SpinBarrier {
 public:
  explicit SpinBarrier(int parties) : parties_(parties) {}

  // Blocks until all parties arrived. The last to arrive runs `on_complete` (if any)
  // before anyone is released; if it throws, the barrier is aborted (the others would
  // otherwise wait for a generation that never comes) and the exception propagates.
  // Throws BarrierAborted once abort() was called.
  void arrive_and_wait(const std::function<void()>& on_complete = {}) {
    if (aborted_.load(std::memory_order_acquire)) throw BarrierAborted();
    const uint32_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      arrived_.store(0, std::memory_order_relaxed);
      if (on_complete) {
        try {
          on_complete();
        } catch (...) {
          abort();
          throw;
        }
      }
      generation_.store(gen + 1, std::memory_order_release);
      generation_.notify_all();
      return;
    }
    for (int spin = 0; generation_.load(std::memory_order_acquire) == gen; ++spin) {
      if (aborted_.load(std::memory_order_acquire)) throw BarrierAborted();
      if (spin < 4000) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
      } else {
        generation_.wait(gen, std::memory_order_acquire);
      }
    }
    if (aborted_.load(std::memory_order_acquire)) throw BarrierAborted();
  }

  // Releases every waiter with BarrierAborted, now and in future waits.
  void abort() {
    aborted_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    generation_.notify_all();
  }

 private:
  const int parties_;
  std::atomic<int> arrived_{0};
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> aborted_{false};
};

}  // namespace mb

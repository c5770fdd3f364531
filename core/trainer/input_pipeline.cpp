// A replica's input pipeline (see input_pipeline.h).
#include "trainer/input_pipeline.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "util/phase_times.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;
// How often a paying loader looks at the stop flag: a run that ends does not wait out a step.
constexpr double kPollS = 0.02;

}  // namespace

InputPipeline::InputPipeline(int loaders, int prefetch, Cost cost, Prepare prepare)
    : window_(int64_t(std::max(1, loaders)) * std::max(1, prefetch)), cost_(cost), prepare_(std::move(prepare)) {
  if (!prepare_)
    prepare_ = [this](int64_t, int64_t images) {
      pay(images, cost_, [this] {
        std::lock_guard lock(mutex_);
        return stop_;
      });
    };
  for (int i = 0; i < std::max(1, loaders); ++i) threads_.emplace_back([this] { loader(); });
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void InputPipeline::begin_epoch(int64_t steps, std::function<int64_t(int64_t)> images_of) {
  {
    std::lock_guard lock(mutex_);
    steps_ = steps;
    next_claim_ = consumed_ = 0;
    ready_.assign(std::size_t(steps), 0);
    images_of_ = std::move(images_of);
  }
  changed_.notify_all();
}

double InputPipeline::wait_ready(int64_t step, const Deadline& deadline) {
  const auto start = Clock::now();
  std::unique_lock lock(mutex_);
  const auto ready = [&] { return ready_[std::size_t(step)] != 0; };
  if (deadline.finite()) {
    if (!changed_.wait_until(lock, deadline.at(), ready))
      throw StallError(fmt::format("the input pipeline did not prepare step {} within {:g} s (--timeout)", step + 1,
                                   deadline.seconds()));
  } else {
    changed_.wait(lock, ready);
  }
  consumed_ = step + 1;
  lock.unlock();
  changed_.notify_all();   // the loaders may take the steps the window now admits
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t InputPipeline::most_ahead() const {
  std::lock_guard lock(mutex_);
  return most_ahead_;
}

void InputPipeline::loader() {
  std::unique_lock lock(mutex_);
  while (true) {
    // A step is taken only inside the window: at most loaders x prefetch steps ahead of the replica's.
    changed_.wait(lock, [&] { return stop_ || (next_claim_ < steps_ && next_claim_ < consumed_ + window_); });
    if (stop_) return;
    const int64_t step = next_claim_++;
    most_ahead_ = std::max(most_ahead_, next_claim_ - consumed_);
    const int64_t images = images_of_(step);
    lock.unlock();
    prepare_(step, images);
    lock.lock();
    ready_[std::size_t(step)] = 1;
    changed_.notify_all();
  }
}

void InputPipeline::pay(int64_t images, const Cost& cost, const std::function<bool()>& stop) {
  if (images <= 0) return;
  // The latency: one sleep for the step's images (sleeping per image would add the scheduler's
  // wake-up to each), in slices that look at the stop flag.
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(cost.latency_s * double(images)));
  while (Clock::now() < until && !stop())
    std::this_thread::sleep_for(std::min(until - Clock::now(), std::chrono::duration_cast<Clock::duration>(
                                                                   std::chrono::duration<double>(kPollS))));
  // The CPU work: computing until this thread's own CPU time has grown by it.
  if (cost.cpu_s <= 0) return;
  const double target = thread_cpu_seconds() + cost.cpu_s * double(images);
  volatile double sink = 1.0;
  for (int64_t i = 0; thread_cpu_seconds() < target; ++i) {
    for (int k = 0; k < 2000; ++k) sink = sink * 1.0000001 + 1e-9;
    if (i % 64 == 0 && stop()) return;
  }
}

}  // namespace mb

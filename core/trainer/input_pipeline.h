// A replica's input pipeline (issue 28): `loaders` threads prepare the replica's coming steps,
// each up to `prefetch` steps, so at most loaders x prefetch steps ahead of the step the replica
// trains, as PyTorch's DataLoader workers do for one rank (num_workers x prefetch_factor
// batches in flight). Preparing a step pays its input cost image by image:
// a simulated latency (the loader sleeps, as it would on a slow disk or a network file system)
// and simulated CPU work (the loader computes until its own CPU time has grown by it, so a
// loader that shares a core with a replica takes longer, as a real decoder would). The replica
// waits at each step until that step is ready; the wait is the breakdown's "waiting for input".
//
// The data itself stays resident (decoded once, data/data_source.h), so what a loader hands
// over is the step's readiness and the batch is still the engine's indices into the resident
// set: the math, the digests and N replicas = 1 replica are untouched. Loaders that decode or
// augment images (streaming a set larger than memory) will hand over pixels here instead.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "util/deadline.h"

namespace mb {

class InputPipeline {
 public:
  struct Cost {
    double latency_s = 0;   // per image: waited
    double cpu_s = 0;       // per image: computed
  };
  // What preparing one step does with `images` images; the default pays `cost` for each.
  // Tests pass their own (to hold a step back, or count).
  using Prepare = std::function<void(int64_t step, int64_t images)>;

  InputPipeline(int loaders, int prefetch, Cost cost, Prepare prepare = {});
  ~InputPipeline();   // stops the loaders (a step being prepared finishes its current image) and joins them
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // An epoch of `steps` steps, the replica's share of step s holding images_of(s) images; the
  // loaders start on step 0. The previous epoch's steps must all have been waited for.
  void begin_epoch(int64_t steps, std::function<int64_t(int64_t)> images_of);
  // Blocks until step `step` of the epoch is ready (steps are waited for in order) and returns
  // the seconds waited. A StallError when `deadline` passes first, naming the step.
  double wait_ready(int64_t step, const Deadline& deadline);

  // For tests: the most steps that were ever prepared or being prepared ahead of the replica's
  // (at most loaders x prefetch).
  int64_t most_ahead() const;

  // Pays `images` x `cost` on the calling thread (the default Prepare); `stop` is polled.
  static void pay(int64_t images, const Cost& cost, const std::function<bool()>& stop);

 private:
  void loader();

  const int64_t window_;       // loaders x prefetch: the most steps prepared ahead
  const Cost cost_;
  Prepare prepare_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  int64_t steps_ = 0;          // of the current epoch
  int64_t next_claim_ = 0;     // the next step a loader takes
  int64_t consumed_ = 0;       // steps the replica has waited for
  std::vector<char> ready_;
  std::function<int64_t(int64_t)> images_of_;
  int64_t most_ahead_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace mb

// The learning rate of each optimizer step under gradual warm-up (Goyal et al. 2017, "Accurate,
// Large Minibatch SGD", section 2.2): it grows linearly, step by step, from the base rate (one
// replica's, eta) to the run's rate (k eta when scaled with the replicas and the accumulated
// micro-batches) over the warm-up's optimizer steps, then stays there. Without a scaled rate
// (base == target) it grows from zero, the common linear warm-up. No warm-up: the target.
#pragma once
#include <algorithm>
#include <cstdint>

namespace mb {

struct LrWarmup {
  double base = 0;              // eta: the rate given, before scaling
  double target = 0;            // the run's rate
  int64_t warmup_steps = 0;     // optimizer steps of warm-up (0: none)

  // The rate of optimizer step `step` (counting from 1, as Adam's).
  double at(int64_t step) const {
    if (warmup_steps <= 0 || step >= warmup_steps) return target;
    const double start = base < target ? base : 0.0;
    return start + (target - start) * double(std::max<int64_t>(step, 1)) / double(warmup_steps);
  }
};

}  // namespace mb

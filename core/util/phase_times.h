// Where one replica's training time went, summed over steps: forward, backward, the gradient
// all-reduce's exposed exchange, the optimizer, and waiting for the slowest replica to arrive
// at the all-reduce. A step is the sum of its phases (up to timer gaps). Engines that compute
// forward and backward in one pass (the reference loops) report both as backward.
#pragma once

namespace mb {

struct PhaseTimes {
  double forward_s = 0, backward_s = 0, allreduce_s = 0, optimizer_s = 0, wait_s = 0;

  double compute_s() const { return forward_s + backward_s + optimizer_s; }
  double total() const { return compute_s() + allreduce_s + wait_s; }
  PhaseTimes& operator+=(const PhaseTimes& o) {
    forward_s += o.forward_s, backward_s += o.backward_s, allreduce_s += o.allreduce_s;
    optimizer_s += o.optimizer_s, wait_s += o.wait_s;
    return *this;
  }
  friend PhaseTimes operator-(PhaseTimes a, const PhaseTimes& b) {
    a.forward_s -= b.forward_s, a.backward_s -= b.backward_s, a.allreduce_s -= b.allreduce_s;
    a.optimizer_s -= b.optimizer_s, a.wait_s -= b.wait_s;
    return a;
  }
};

}  // namespace mb

// Where one replica's training time went, summed over steps: forward, backward, the gradient
// all-reduce's exposed exchange, the optimizer, and waiting for the slowest replica to arrive
// at the all-reduce. A step is the sum of its phases (up to timer gaps). Engines that compute
// forward and backward in one pass (the reference loops) report both as backward. The CUDA
// engine does not time phases per step (that would stop the GPU running ahead): it reports
// only allreduce_s, each step's exposed communication as measured in its warm-up (CommProfile).
#pragma once
#include <cstdint>

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

// The gradient all-reduce as nccl-tests and DDP's profiling see it, measured once in an
// engine's untimed warm-up (empty for a single replica or a host communicator):
//   exposed = (step with communication) - (the same step without it), per step: what the
//   communication adds to a step after overlapping with backward;
//   algbw = bytes / time of the bare all-reduce of the whole gradient, busbw = algbw x 2(n-1)/n.
struct CommProfile {
  int replicas = 0;                // 0: not measured
  int64_t bytes = 0;               // the gradient buffer
  int buckets = 0;                 // all-reduce calls per step
  double allreduce_s = 0;          // one bare all-reduce of `bytes`
  double algbw_gbs = 0, busbw_gbs = 0;   // GB/s (1e9 bytes per second)
  double step_s = 0;               // a training step with its all-reduces
  double step_no_comm_s = 0;       // the same step without them
  double exposed_s = 0;            // max(0, step_s - step_no_comm_s)
  bool measured() const { return replicas > 0; }
};

}  // namespace mb

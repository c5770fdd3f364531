// The default training step shared by engines that do not fuse it (the CPU ones).
#include "backends/replica_engine.h"

#include <chrono>

#include "comm/communicator.h"
#include "model/cnn_spec.h"

namespace mb {

BatchStats ReplicaEngine::train_step(std::span<const int32_t> indices, float grad_scale, Communicator& comm,
                                     int rank, const AdamConfig& cfg, int64_t step, StepTiming& timing) {
  BatchStats stats = forward_backward(indices, grad_scale);
  auto t0 = std::chrono::steady_clock::now();
  if (comm.size() > 1) comm.all_reduce_sum(rank, grad_buffer(), cnn::kParamCount);
  timing.allreduce_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  apply_adam(cfg, step);
  return stats;
}

}  // namespace mb

// A replica engine: one full copy of the model on one device (a CPU core or a GPU), with its
// parameters, gradients and Adam state. The mirrored trainer drives N of them, one host
// thread each. Backends (reference loops, oneDNN, CUDA) are peers behind this interface.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "comm/communicator.h"
#include "data/dataset.h"
#include "model/cnn_spec.h"
#include "optim/adam.h"

namespace mb {

struct BatchStats {
  double loss_sum = 0.0;   // sum over samples of the cross-entropy (not divided by anything)
  int64_t correct = 0;     // argmax == label
  int64_t samples = 0;
};

struct StepTiming {
  double allreduce_s = 0.0;  // wall time this replica spent inside the gradient all-reduce
};

class ReplicaEngine {
 public:
  virtual ~ReplicaEngine() = default;

  virtual std::string device_name() const = 0;   // "cpu:0 (oneDNN)", "cuda:0 NVIDIA H200"

  // Make the data available on this device (CPU: keep a reference; CUDA: upload once).
  // The Datasets must outlive the engine.
  virtual void bind_data(const Dataset& train, const Dataset& val) = 0;

  // Host <-> device copies of the flat parameter buffer (cnn::kParamCount floats).
  // set_params also zeroes the Adam moments.
  virtual void set_params(std::span<const float> params) = 0;
  virtual void get_params(std::span<float> params) const = 0;

  // Forward + backward over train samples `indices` (may be empty: zero gradient).
  // Gradients are d(sum of per-sample losses)/dθ * grad_scale, written to grad_buffer().
  virtual BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale) = 0;

  // The flat gradient buffer, in the engine's device memory (host memory for CPU engines).
  virtual float* grad_buffer() = 0;
  virtual void get_grads(std::span<float> grads) const = 0;   // copy to host, for tests

  // Adam step on the engine's parameters using grad_buffer(). `step` counts from 1.
  virtual void apply_adam(const AdamConfig& cfg, int64_t step) = 0;

  // A whole training step: forward_backward, sum gradients across replicas with `comm`
  // (collective: every rank calls it), Adam. Backends may override to overlap the
  // all-reduce with backward or replay a captured graph.
  virtual BatchStats train_step(std::span<const int32_t> indices, float grad_scale, Communicator& comm,
                                int rank, const AdamConfig& cfg, int64_t step, StepTiming& timing) {
    BatchStats stats = forward_backward(indices, grad_scale);
    const auto t0 = std::chrono::steady_clock::now();
    if (comm.size() > 1) comm.all_reduce_sum(rank, grad_buffer(), cnn::kParamCount);
    timing.allreduce_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    apply_adam(cfg, step);
    return stats;
  }

  // Forward only over validation samples `indices` (any count; chunked internally).
  virtual BatchStats evaluate(std::span<const int32_t> indices) = 0;

  // Forward only over train samples, for callers that want train-set metrics.
  virtual BatchStats evaluate_train(std::span<const int32_t> indices) = 0;

  // Wait until queued device work has finished (no-op on CPU).
  virtual void synchronize() {}
};

}  // namespace mb

// A replica engine: one full copy of the model on one device (a CPU core or a GPU), with its
// parameters, gradients and Adam state. The mirrored trainer drives N of them, one host
// thread each. Backends (reference loops, oneDNN, CUDA) are peers behind this interface.
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/gradient_buckets.h"
#include "data/dataset.h"
#include "model/dropout.h"
#include "model/model_spec.h"
#include "optim/adam.h"
#include "util/engine_report.h"
#include "util/phase_times.h"

namespace mb {

struct BatchStats {
  double loss_sum = 0.0;   // sum over samples of the cross-entropy (not divided by anything)
  int64_t correct = 0;     // argmax == label
  int64_t samples = 0;
  BatchStats& operator+=(const BatchStats& o) {
    loss_sum += o.loss_sum, correct += o.correct, samples += o.samples;
    return *this;
  }
};

// One training step as one replica sees it.
struct TrainStep {
  std::span<const int32_t> indices;   // this replica's share of the global batch (may be empty)
  int64_t order_offset = 0;           // where `indices` starts in the epoch order (begin_epoch)
  int64_t global_batch = 0;           // samples of this step over all replicas
  float grad_scale = 1.0f;            // 1 / global_batch: each replica's loss is its sum / global
  int64_t adam_step = 0;              // counts from 1
  bool time_phases = true;            // false: leave PhaseTimes alone (to measure their cost)
  double* local_grad_norm = nullptr;  // when set: the L2 norm of this replica's own gradient,
                                      // before the all-reduce (engines that cannot: leave it)
  // Gradient accumulation (--accumulate): false for a micro-batch that only adds its gradient
  // to the window's; true for the window's last, which all-reduces the window's sum and steps
  // the optimizer. grad_scale is then 1 / the window's samples over all replicas.
  bool sync = true;
  // Overlap (--bucket-mb): the gradient's buckets in the order the backward pass fills them;
  // the step tells the communicator how long before the exchange each was complete. Empty: off.
  std::span<const GradientBucket> buckets;
};

class ReplicaEngine {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ReplicaEngine() = default;

  virtual std::string device_name() const = 0;   // "cpu (oneDNN)", "cuda:0 NVIDIA H200"
  virtual const ModelSpec& model() const = 0;     // what it trains: sizes every buffer below

  // Make the data available on this device (CPU: keep a reference; CUDA: upload once).
  // The Datasets must outlive the engine.
  virtual void bind_data(const Dataset& train, const Dataset& val) = 0;

  // Host <-> device copies of the flat parameter buffer (model().param_count() floats).
  // set_params also zeroes the Adam moments.
  virtual void set_params(std::span<const float> params) = 0;
  virtual void get_params(std::span<float> params) const = 0;

  // Forward + backward over train samples `indices` (may be empty: zero gradient).
  // Gradients are d(sum of per-sample losses)/dθ * grad_scale, written to grad_buffer().
  // With `times`, adds the forward and backward time.
  virtual BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale,
                                      PhaseTimes* times = nullptr) = 0;

  // The flat gradient buffer, in the engine's device memory (host memory for CPU engines).
  virtual float* grad_buffer() = 0;
  virtual void get_grads(std::span<float> grads) const = 0;   // copy to host, for tests

  // Adam step on the engine's parameters using grad_buffer(). `step` counts from 1.
  virtual void apply_adam(const AdamConfig& cfg, int64_t step) = 0;

  // Called once per epoch before its first train_step with the whole epoch's training order
  // (every replica gets the same); TrainStep::order_offset points into it. Engines that keep
  // the order on the device upload it here, once, instead of indices every step.
  virtual void begin_epoch(std::span<const int32_t> order) { (void)order; }

  // Prepares everything the listed step shapes need (plans, kernels, graphs) before the
  // timed epochs. Collective (every rank calls it with the same shapes, in the same order);
  // must leave parameters, Adam moments and statistics as they were.
  struct StepShape {
    int64_t share = 0;          // this replica's samples
    int64_t global_batch = 0;
  };
  virtual void warm_up(std::span<const StepShape> shapes, Communicator& comm) {
    (void)shapes;
    (void)comm;
  }

  // A whole training step: forward_backward, sum of the gradients over replicas with `comm`
  // (collective: every rank calls it), Adam. Its loss/accuracy statistics accumulate until
  // take_train_stats(); its phase times are added to `times`, and the CPU time this thread got
  // while it computed (a host engine computes on the calling thread). Backends may override to
  // overlap the all-reduce with backward, replay a captured graph, or run ahead of the host.
  virtual void train_step(const TrainStep& step, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) {
    const double cpu0 = step.time_phases ? thread_cpu_seconds() : 0.0;
    if (!step.buckets.empty()) gradient_ready_.assign(model().shape().layers.size(), Clock::time_point{});
    pending_ += forward_backward(step.indices, step.grad_scale, step.time_phases ? &times : nullptr);
    const std::size_t count = model().param_count();
    accumulate(step, count, step.time_phases ? &times : nullptr);
    if (step.time_phases) times[phase::ComputeCpu] += thread_cpu_seconds() - cpu0;
    if (!step.sync) return;   // a micro-batch: its gradient waits in the window's sum
    if (step.local_grad_norm) {
      double sum = 0;
      const float* g = grad_buffer();
      for (std::size_t i = 0; i < count; ++i) sum += double(g[i]) * g[i];
      *step.local_grad_norm = std::sqrt(sum);
    }
    if (comm.size() > 1) {
      if (!step.buckets.empty()) announce_buckets(step.buckets, comm);
      comm.all_reduce_sum(grad_buffer(), count);
      const CollectiveTimes ct = comm.take_times();
      times[phase::Wait] += ct.wait_s;
      times[phase::AllReduce] += ct.transfer_s;
      times[phase::HiddenAllReduce] += ct.hidden_s;
    }
    if (!step.time_phases) return apply_adam(cfg, step.adam_step);
    const auto t0 = Clock::now();
    const double cpu1 = thread_cpu_seconds();
    apply_adam(cfg, step.adam_step);
    times[phase::ComputeCpu] += thread_cpu_seconds() - cpu1;
    times[phase::Optimizer] += std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // The statistics of the train_steps since the last call (waits for the device).
  virtual BatchStats take_train_stats() { return std::exchange(pending_, BatchStats{}); }

 protected:
  // Engines that know when their backward pass completes a layer's weight gradient say so
  // (--bucket-mb overlaps each bucket's wire time from then on); a bucket whose layer was not
  // noted counts as complete at the end of the backward pass (no overlap).
  void note_gradient_ready(std::size_t layer) {
    if (layer < gradient_ready_.size()) gradient_ready_[layer] = Clock::now();
  }

  // Gradient accumulation on the host's gradient buffer: a micro-batch's gradient is added to
  // the window's sum (in micro-batch order, the same on every replica); the window's last step
  // leaves the whole sum in grad_buffer(). Counted as backward time.
  void accumulate(const TrainStep& step, std::size_t count, PhaseTimes* times) {
    if (step.sync && !window_open_) return;   // no accumulation: nothing to do, nothing kept
    const auto t0 = Clock::now();
    float* g = grad_buffer();
    if (!window_open_) {
      window_.assign(g, g + count);
      window_open_ = true;
    } else if (!step.sync) {
      for (std::size_t i = 0; i < count; ++i) window_[i] += g[i];
    } else {
      for (std::size_t i = 0; i < count; ++i) g[i] = window_[i] + g[i];
      window_open_ = false;
    }
    if (times) (*times)[phase::Backward] += std::chrono::duration<double>(Clock::now() - t0).count();
  }

 public:

  // What warm_up measured of the gradient all-reduce (CommProfile), for the run record.
  virtual CommProfile comm_profile() const { return {}; }

  // What the engine chose and ran (path, graphs, algorithms), for the run record; device
  // engines fill it in warm_up. Empty for the CPU engines.
  virtual EngineReport engine_report() const { return {}; }

  // Steps between the trainer's statistics exchanges, for every replica of this kind. Each
  // exchange is an all-gather that every replica waits at, so host engines report every
  // kHostStepsPerReport steps (about 15 reports a second at the reference CNN's pace: enough
  // for the live charts, and a stop within tens of milliseconds); device engines more rarely,
  // where reading statistics would stall a device that could run ahead. The teaching pace
  // reports every step.
  static constexpr int kHostStepsPerReport = 8;
  virtual int steps_per_report() const { return kHostStepsPerReport; }

  // Forward only over validation samples `indices` (any count; chunked internally).
  virtual BatchStats evaluate(std::span<const int32_t> indices) = 0;

  // Forward only over train samples, for callers that want train-set metrics.
  virtual BatchStats evaluate_train(std::span<const int32_t> indices) = 0;

  // Wait until queued device work has finished (no-op on CPU).
  virtual void synchronize() {}

  // The epoch's dropout key (model/dropout.h), set by the trainer before the epoch's first step:
  // with each sample's index it decides the sample's masks, whichever replica computes it.
  virtual void set_dropout_key(const DropoutKey& key) { dropout_key_ = key; }

 protected:
  DropoutKey dropout_key_;

 private:
  // The buckets with how long before now each was complete, to the communicator.
  void announce_buckets(std::span<const GradientBucket> buckets, Communicator& comm) {
    const auto now = Clock::now();
    overlap_.clear();
    for (const GradientBucket& b : buckets) {
      const auto ready = std::size_t(b.ready_layer) < gradient_ready_.size() ? gradient_ready_[std::size_t(b.ready_layer)]
                                                                              : Clock::time_point{};
      const double lead = ready == Clock::time_point{} ? 0.0 : std::chrono::duration<double>(now - ready).count();
      overlap_.push_back({b.bytes(), std::max(0.0, lead)});
    }
    comm.overlap_next_all_reduce(overlap_);
  }

  BatchStats pending_;
  std::vector<Clock::time_point> gradient_ready_;   // per layer, this step (--bucket-mb)
  std::vector<OverlapBucket> overlap_;
  std::vector<float> window_;   // the accumulation window's gradient sum so far
  bool window_open_ = false;
};

}  // namespace mb

// What the CPU engine replays each step, for one batch size: the interface of its two plans.
// layer_plan.h compiles any model into per-layer oneDNN primitives; onednn_plan.h is the
// specialisation for the reference CNN family (the own fused conv1+pool1 loop and Winograd
// conv2+pool2 kernels), chosen where the model's shape is the one they were written for
// (make_step_plan). Both read a plain N x C x H x W input and leave plain N x classes logits.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "config/engine_options.h"
#include "model/dropout.h"
#include "model/model_spec.h"

namespace mb::onednn {

class StepPlan {
 public:
  virtual ~StepPlan() = default;

  virtual int batch() const = 0;
  virtual float* input() = 0;                 // batch x input size, plain C, H, W per sample
  virtual const float* logits() const = 0;    // batch x classes
  virtual float* logits_grad() = 0;           // batch x classes, filled before backward()

  // Copies the weights from the flat buffer into the primitives' layouts when they changed
  // since the last call (the engine bumps `version` on every parameter update).
  virtual void sync_weights(dnnl::stream& stream, uint64_t version) = 0;
  // training: dropout layers drop by `samples` (their ids must stay valid until backward()).
  virtual void forward(dnnl::stream& stream, bool training, const SampleKeys& samples) = 0;
  // Needs forward(training) and logits_grad() filled; writes every gradient into the flat buffer.
  virtual void backward(dnnl::stream& stream) = 0;

  // The primitives' implementation names, for the debug log.
  virtual std::string describe() = 0;

  // Called by backward() as each layer's weight gradient is complete (its index in the model's
  // layers), for overlapping the exchange with the rest of the pass (--bucket-mb); unset: never.
  std::function<void(std::size_t layer)> gradient_ready;

  // Per-stage time of forward() and backward() (bench/kernel_bench's layer table): wall time,
  // or with cpu_time the calling thread's CPU time (meaningful with one OpenMP thread; robust
  // against other load on a shared machine). While on, every stage waits for the stream
  // before its clock stops. Stages in execution order, seconds summed since the last call.
  struct StageTime {
    std::string name;
    double seconds = 0.0;
    int64_t calls = 0;
  };
  void set_profiling(bool on, bool cpu_time = false) {
    profiling_ = on;
    profile_cpu_time_ = cpu_time;
    profile_.clear();
  }
  const std::vector<StageTime>& profile() const { return profile_; }

 protected:
  // Runs `body` as stage `name`, timed when profiling.
  template <typename F>
  void stage(dnnl::stream& stream, const std::string& name, F&& body) {
    if (!profiling_) {
      body();
      return;
    }
    const double start = now();
    body();
    stream.wait();
    record(name, now() - start);
  }

 private:
  double now() const;
  void record(const std::string& name, double seconds);

  bool profiling_ = false, profile_cpu_time_ = false;
  std::vector<StageTime> profile_;
};

// The plan for `model` at `batch`: the reference family's own-kernel plan when the model is
// one of it, the per-layer plan otherwise (or always, with `generic`: for tests and benches).
// `params` and `grads` are the engine's flat buffers; they must outlive the plan.
std::unique_ptr<StepPlan> make_step_plan(const dnnl::engine& engine, int batch, const ModelSpec& model,
                                         const float* params, float* grads, Conv2Kernel conv2 = Conv2Kernel::Own,
                                         bool generic = false);

}  // namespace mb::onednn

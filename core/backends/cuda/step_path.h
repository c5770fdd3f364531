// The device work of one training step, forward through backward, as one of two
// implementations behind one interface (--cuda-path, backends/common/cuda_options.h):
//   cudnn  cuDNN convolutions, cuBLAS dense layers, own epilogue kernels (kernels.h);
//   fused  own fused kernels only (fused_kernels.h), at most 12 graph nodes per step.
// The engine (cuda_engine.cpp) owns the data, the parameters, gradients and Adam state, the
// all-reduce buckets, Adam, graphs and waits; a path owns its activations and plans. Paths
// only enqueue work on the engine's stream: nothing here waits or allocates while a step is
// being captured.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/common/conv_algo_policy.h"
#include "backends/common/cuda_options.h"
#include "config/precision.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/step_capture.h"
#include "util/deadline.h"
#include "util/engine_report.h"

namespace mb::cuda {

// What a path works on, fixed for the engine's life.
struct PathContext {
  cudaStream_t stream = nullptr;
  int max_batch = 0;
  int hidden = 0;  // the dense layer's width (ModelSpec::hidden)
  Precision precision = Precision::Fp32;
  float* params = nullptr;  // flat, cnn_spec layout
  float* grads = nullptr;   // flat, overwritten by every backward
};

// One step's (or evaluation chunk's) samples and per-step values.
struct StepInputs {
  int n = 0;
  const uint8_t* pixels = nullptr;  // the bound data set on the device
  const uint8_t* labels = nullptr;
  const int32_t* idx = nullptr;  // n sample indices on the device
  float grad_scale = 1.0f;       // 1 / global batch
  double* stats = nullptr;       // += loss sum, correct count
};

// The gradient buckets in the order backward completes them: everything but conv1 (as soon
// as conv2's weight gradient exists), then conv1's 320 floats.
inline constexpr int kBuckets = 2;

// Timings of the convolution passes' candidate algorithms, measured by a path for one batch
// (empty for paths without library convolutions).
struct ConvTuning {
  std::vector<PassTimings> passes;
};

class StepPath {
 public:
  virtual ~StepPath() = default;
  virtual CudaPath kind() const = 0;

  // Plans and buffers for batch n (1..max_batch). Never under capture; may allocate.
  virtual void prepare(int n) = 0;
  // The workspace every prepared plan fits in (bytes); the engine allocates it before capture.
  virtual std::size_t workspace_bytes() const { return 0; }
  virtual void set_workspace(void* workspace, std::size_t bytes) { (void)workspace, (void)bytes; }

  // Forward, loss (adds to in.stats) and backward of in.n >= 1 samples: every gradient
  // overwritten, bucket_ready(b) called (host side, in enqueue order) as soon as bucket b is
  // final, mid_step() between forward and backward (fault injection; may throw). With a
  // capture, marks its Input and Loss kernels.
  virtual void train(const StepInputs& in, StepCapture* capture, const std::function<void(int)>& bucket_ready,
                     const std::function<void()>& mid_step) = 0;
  // Forward and loss only (adds to in.stats).
  virtual void evaluate(const StepInputs& in) = 0;
  // A captured step's Input and Loss nodes run with `in` from the next launch on.
  virtual void update(const CapturedStep& step, const StepInputs& in) = 0;

  // Convolution algorithms by measurement (cudnn path): candidates of the prepared plan for
  // batch n timed on the device within `deadline`; then the choice every rank agreed on.
  virtual ConvTuning measure(int n, const Deadline& deadline, const std::function<void()>& wait) {
    (void)n, (void)deadline, (void)wait;
    return {};
  }
  virtual void choose(int n, const std::vector<AgreedAlgo>& agreed) { (void)n, (void)agreed; }
  // The choices of the plans for these batches, for the run record.
  virtual std::vector<ConvChoice> choices(const std::vector<int>& batches) const {
    (void)batches;
    return {};
  }
};

std::unique_ptr<StepPath> make_cudnn_path(const PathContext& ctx, cudnnHandle_t cudnn, cublasHandle_t cublas);
std::unique_ptr<StepPath> make_fused_path(const PathContext& ctx);

// Where bucket b lies in the flat gradient buffer.
struct BucketRange {
  std::size_t offset, count;
};
BucketRange bucket_range(int bucket, std::size_t param_count);

}  // namespace mb::cuda

// The CUDA replica engine: the whole model on one GPU. cuDNN for the convolutions, cuBLAS
// for the dense layers (row-major [out, in] weights seen by column-major cuBLAS as
// their transpose), own kernels for everything else (kernels.h). Parameters, gradients and
// Adam moments are each ONE flat device buffer in cnn_spec's layout, so the all-reduce and
// the optimizer see a single range. Both data sets live on the device as uint8; a step
// uploads only its indices (with the step's scalars, one small copy from pinned memory).
//
// train_step overlaps the gradient all-reduce with backward: each layer's gradient range is
// handed to the communicator on its own stream (Communicator::stream()) as soon as backward
// has produced it (fc2, fc1, conv2, conv1: the flat layout in reverse). With NCCL or a single replica the whole
// step is captured into a CUDA graph once per batch size (after one eager warm-up step)
// and replayed; MIRRORBENCH_NO_GRAPH=1 keeps every step eager, for debugging.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/cudnn_plan.h"
#include "backends/cuda/device_select.h"
#include "backends/cuda/kernels.h"
#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

using namespace cnn;

constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;   // NVIDIA's recommendation for Hopper
constexpr std::size_t kMinCudnnWorkspace = std::size_t(64) << 20;  // rarely outgrown: growth drops graphs

// Gradient ranges in the order backward completes them: the flat layout back to front.
constexpr int kLayers = 4;
struct Range {
  std::size_t offset, count;
};
Range layer_range(int layer) {
  const auto& t = param_tensors();
  switch (layer) {
    case 0: return {t[kFc2W].offset, kParamCount - t[kFc2W].offset};                 // fc2
    case 1: return {t[kFc1W].offset, t[kFc2W].offset - t[kFc1W].offset};             // fc1
    case 2: return {t[kConv2W].offset, t[kFc1W].offset - t[kConv2W].offset};         // conv2
    default: return {0, t[kConv2W].offset};                                          // conv1
  }
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

struct DeviceData {
  DeviceBuffer<uint8_t> pixels, labels;
  int64_t count = 0;
  std::string name;
};

class CudaEngine final : public ReplicaEngine {
 public:
  CudaEngine(int device, int max_batch);
  ~CudaEngine() override;
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  std::string device_name() const override { return name_; }
  void bind_data(const Dataset& train, const Dataset& val) override;
  void set_params(std::span<const float> params) override;
  void get_params(std::span<float> params) const override;
  BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) override;
  float* grad_buffer() override { return grads_.get(); }
  void get_grads(std::span<float> grads) const override;
  void apply_adam(const AdamConfig& cfg, int64_t step) override;
  void train_step(const TrainStep& step, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) override;
  BatchStats take_train_stats() override { return std::exchange(pending_, BatchStats{}); }
  BatchStats evaluate(std::span<const int32_t> indices) override { return evaluate_on(val_, indices); }
  BatchStats evaluate_train(std::span<const int32_t> indices) override { return evaluate_on(train_, indices); }
  void synchronize() override;

 private:
  struct CapturedStep {
    GraphExec exec;
    bool timed = false;
  };

  cudaStream_t s() const { return stream_.get(); }
  float* param(ParamId id) const { return params_.get() + param_tensors()[id].offset; }
  float* grad(ParamId id) const { return grads_.get() + param_tensors()[id].offset; }
  const StepScalars* scalars_dev() const { return reinterpret_cast<const StepScalars*>(step_dev_.get()); }
  const float* grad_scale_dev() const {
    return reinterpret_cast<const float*>(step_dev_.get() + offsetof(StepScalars, grad_scale));
  }
  const int32_t* indices_dev() const { return reinterpret_cast<const int32_t*>(step_dev_.get() + sizeof(StepScalars)); }

  int check_indices(std::span<const int32_t> indices, const DeviceData& data, bool limit_to_batch) const;
  void stage_step(std::span<const int32_t> indices, float grad_scale, const AdamConfig& cfg, float lr_t);
  ConvPlan& plan_for(int n);
  void upload(const Dataset& d, DeviceData& out, const char* role);

  // Enqueue only (no host waits): usable eagerly and under stream capture.
  void forward(int n, const ConvPlan& plan, const DeviceData& data, const int32_t* idx);
  template <typename LayerReady>
  void backward(int n, const ConvPlan& plan, LayerReady&& layer_ready);
  void enqueue_train_step(int n, const ConvPlan* plan, Communicator* comm, bool timed, bool capturing);
  void enqueue_allreduce(int layer, Communicator& comm, bool timed, bool capturing);

  void conv_forward(cudnnTensorDescriptor_t xd, const float* x, cudnnFilterDescriptor_t wd, const float* w,
                    cudnnConvolutionFwdAlgo_t algo, cudnnTensorDescriptor_t yd, float* y);
  void dense_forward(const float* x, const float* w, float* y, int n, int in, int out);
  void dense_backward_weight(const float* x, const float* dy, float* dw, int n, int in, int out);
  void dense_backward_input(const float* w, const float* dy, float* dx, int n, int in, int out);

  CapturedStep capture_step(int n, const ConvPlan& plan, Communicator* comm);
  bool graph_timing_supported();
  void drop_graphs();
  double allreduce_seconds();
  BatchStats finish_stats(int64_t samples);
  BatchStats evaluate_on(const DeviceData& data, std::span<const int32_t> indices);

  const int device_;
  const int max_batch_;
  std::string name_;
  bool use_graphs_ = true;

  // Declaration order = reverse destruction order: streams outlive handles, handles outlive
  // buffers and graphs.
  Stream stream_;
  CublasHandle cublas_;
  CudnnHandle cudnn_;
  ConvShapes shapes_;
  std::vector<Event> layer_ready_, ar_begin_, ar_end_;
  Event comm_done_, probe_begin_, probe_end_;

  DeviceBuffer<float> cublas_workspace_, workspace_;
  DeviceBuffer<float> params_, grads_, m_, v_;
  DeviceBuffer<float> grad_sum_;           // forward_backward beyond max_batch only
  DeviceBuffer<unsigned char> step_dev_;   // StepScalars, then max_batch int32 indices
  PinnedBuffer<unsigned char> step_host_;
  DeviceBuffer<double> stats_dev_;         // loss sum, correct count
  PinnedBuffer<double> stats_host_;
  DeviceBuffer<int32_t> eval_idx_, labels_;
  DeviceBuffer<float> x_, a1_, p1_, a2_, p2_, h_, logits_;          // forward activations
  DeviceBuffer<float> dlogits_, dh_, dp2_, da2_, dp1_, da1_;         // their gradients
  DeviceData train_, val_;

  std::map<int, ConvPlan> plans_;
  std::map<int, CapturedStep> graphs_;     // by batch size, for graph_comm_
  std::set<int> warmed_;                   // batch sizes that ran one eager step
  const Communicator* graph_comm_ = nullptr;
  BatchStats pending_;                     // train_step statistics since take_train_stats
  int graph_timing_ = -1;                  // -1 unknown, 0 no, 1 yes
};

CudaEngine::CudaEngine(int device, int max_batch) : device_(device), max_batch_(max_batch) {
  MB_CHECK(max_batch >= 1, ConfigError, "cuda:{}: the batch per replica must be at least 1, got {}", device,
           max_batch);
  select_device(device);
  try {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    name_ = fmt::format("cuda:{} {}", device, prop.name);
    use_graphs_ = !env_flag("MIRRORBENCH_NO_GRAPH");

    stream_ = make_stream();
    cublas_ = make_cublas();
    CUBLAS_CHECK(cublasSetStream(cublas_.get(), s()));
    // An explicit workspace (set after the stream: setting a stream resets it) keeps cuBLAS
    // from allocating while a step is being captured into a graph.
    cublas_workspace_.allocate(kCublasWorkspace / sizeof(float));
    CUBLAS_CHECK(cublasSetWorkspace(cublas_.get(), cublas_workspace_.get(), cublas_workspace_.bytes()));
    // Plain FP32 (no TF32), like the CPU engines: cuBLAS's default math mode never rounds
    // FP32 inputs to TF32 (only CUBLAS_TF32_TENSOR_OP_MATH would).
    CUBLAS_CHECK(cublasSetMathMode(cublas_.get(), CUBLAS_DEFAULT_MATH));
    cudnn_ = make_cudnn();
    CUDNN_CHECK(cudnnSetStream(cudnn_.get(), s()));
    shapes_ = ConvShapes::make();

    for (int l = 0; l < kLayers; ++l) {
      layer_ready_.push_back(make_event(false));
      ar_begin_.push_back(make_event(true));
      ar_end_.push_back(make_event(true));
    }
    comm_done_ = make_event(false);
    probe_begin_ = make_event(true);
    probe_end_ = make_event(true);

    params_.allocate(kParamCount);
    grads_.allocate(kParamCount);
    m_.allocate(kParamCount);
    v_.allocate(kParamCount);
    step_dev_.allocate(sizeof(StepScalars) + sizeof(int32_t) * std::size_t(max_batch));
    step_host_ = PinnedBuffer<unsigned char>(step_dev_.size());
    stats_dev_.allocate(2);
    stats_host_ = PinnedBuffer<double>(2);

    const std::size_t b = std::size_t(max_batch);
    labels_.allocate(b);
    x_.allocate(b * kImagePixels);
    a1_.allocate(b * kConv1Out * kConv1Side * kConv1Side);
    p1_.allocate(b * kConv1Out * kPool1Side * kPool1Side);
    a2_.allocate(b * kConv2Out * kConv2Side * kConv2Side);
    p2_.allocate(b * kFlat);
    h_.allocate(b * kHidden);
    logits_.allocate(b * kClasses);
    dlogits_.allocate(b * kClasses);
    dh_.allocate(b * kHidden);
    dp2_.allocate(b * kFlat);
    da2_.allocate(a2_.size());
    dp1_.allocate(p1_.size());
    da1_.allocate(a1_.size());

    CUDA_CHECK(cudaMemsetAsync(params_.get(), 0, params_.bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), s()));
    CUDA_CHECK(cudaStreamSynchronize(s()));
  } catch (const DeviceError& e) {
    throw DeviceError(fmt::format("cuda:{}: {}", device, e.what()));
  }
  spdlog::debug("{}: engine ready (max batch {}, CUDA graphs {})", name_, max_batch_, use_graphs_ ? "on" : "off");
}

CudaEngine::~CudaEngine() {
  // Errors are ignored: this also runs while unwinding from a device failure.
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_.get());
  drop_graphs();
  cudaGetLastError();
}

void CudaEngine::drop_graphs() {
  graphs_.clear();
  warmed_.clear();
  graph_comm_ = nullptr;
}

void CudaEngine::synchronize() {
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

void CudaEngine::upload(const Dataset& d, DeviceData& out, const char* role) {
  out = DeviceData{};
  out.name = d.name;
  if (d.count == 0) return;
  MB_CHECK(d.rows == kImageSide && d.cols == kImageSide, DataError,
           "{} ({} set) has {}x{} images, the model takes {}x{}", d.name, role, d.rows, d.cols, kImageSide,
           kImageSide);
  MB_CHECK(d.pixels.size() == std::size_t(d.count) * kImagePixels && d.labels.size() == std::size_t(d.count),
           DataError, "{} ({} set): {} images but {} pixel bytes and {} labels", d.name, role, d.count,
           d.pixels.size(), d.labels.size());
  // The reference refuses such a label with DataError; on the device it would index past
  // its sample's logits instead.
  const auto bad = std::find_if(d.labels.begin(), d.labels.end(), [](uint8_t l) { return l >= kClasses; });
  MB_CHECK(bad == d.labels.end(), DataError, "{} ({} set): label {} of sample {} is not a class (the model has {})",
           d.name, role, int(bad == d.labels.end() ? 0 : *bad), bad - d.labels.begin(), kClasses);
  out.pixels.allocate(d.pixels.size());
  out.labels.allocate(d.labels.size());
  CUDA_CHECK(cudaMemcpyAsync(out.pixels.get(), d.pixels.data(), d.pixels.size(), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemcpyAsync(out.labels.get(), d.labels.data(), d.labels.size(), cudaMemcpyHostToDevice, s()));
  out.count = d.count;
}

void CudaEngine::bind_data(const Dataset& train, const Dataset& val) {
  CUDA_CHECK(cudaSetDevice(device_));
  drop_graphs();  // captured gathers read the old buffers
  CUDA_CHECK(cudaStreamSynchronize(s()));
  upload(train, train_, "training");
  upload(val, val_, "validation");
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

void CudaEngine::set_params(std::span<const float> params) {
  MB_CHECK(params.size() == kParamCount, Error, "{}: set_params got {} floats, the model has {}", name_,
           params.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(params_.get(), params.data(), params_.bytes(), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), s()));
  CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), s()));
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

void CudaEngine::get_params(std::span<float> params) const {
  MB_CHECK(params.size() == kParamCount, Error, "{}: get_params got room for {} floats, the model has {}", name_,
           params.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(params.data(), params_.get(), params_.bytes(), cudaMemcpyDeviceToHost, s()));
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

void CudaEngine::get_grads(std::span<float> grads) const {
  MB_CHECK(grads.size() == kParamCount, Error, "{}: get_grads got room for {} floats, the model has {}", name_,
           grads.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(grads.data(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToHost, s()));
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

int CudaEngine::check_indices(std::span<const int32_t> indices, const DeviceData& data, bool limit_to_batch) const {
  MB_CHECK(!limit_to_batch || indices.size() <= std::size_t(max_batch_), ConfigError,
           "{}: {} samples in one step, the engine was built for at most {}", name_, indices.size(), max_batch_);
  if (indices.empty()) return 0;
  MB_CHECK(data.count > 0, ConfigError, "{}: no {} data bound (call bind_data first)", name_,
           data.name.empty() ? "such" : data.name);
  for (int32_t i : indices) {
    // An out-of-range index would be an illegal address on the device, which poisons the
    // whole CUDA context: refuse it here.
    MB_CHECK(i >= 0 && i < data.count, ConfigError, "{}: sample index {} outside {} ({} images)", name_, i, data.name,
             data.count);
  }
  return static_cast<int>(indices.size());
}

// The step's scalars and indices in one copy from pinned memory. Every public method ends
// with a stream synchronisation, so the pinned buffer is never overwritten under a pending
// copy.
void CudaEngine::stage_step(std::span<const int32_t> indices, float grad_scale, const AdamConfig& cfg, float lr_t) {
  StepScalars sc;
  sc.grad_scale = grad_scale;
  sc.lr_t = lr_t;
  sc.beta1 = cfg.beta1;
  sc.beta2 = cfg.beta2;
  sc.epsilon = cfg.epsilon;
  std::memcpy(step_host_.get(), &sc, sizeof sc);
  if (!indices.empty())
    std::memcpy(step_host_.get() + sizeof sc, indices.data(), indices.size() * sizeof(int32_t));
  CUDA_CHECK(cudaMemcpyAsync(step_dev_.get(), step_host_.get(), sizeof sc + indices.size() * sizeof(int32_t),
                             cudaMemcpyHostToDevice, s()));
}

ConvPlan& CudaEngine::plan_for(int n) {
  auto it = plans_.find(n);
  if (it == plans_.end()) it = plans_.emplace(n, make_conv_plan(cudnn_.get(), shapes_, n)).first;
  const std::size_t need = it->second.workspace_bytes;
  if (need > workspace_.bytes()) {
    // Captured graphs hold the old workspace's address.
    drop_graphs();
    CUDA_CHECK(cudaStreamSynchronize(s()));
    const std::size_t bytes = std::max(need, kMinCudnnWorkspace);
    workspace_.allocate((bytes + sizeof(float) - 1) / sizeof(float));
  }
  return it->second;
}

// --- layer primitives ------------------------------------------------------------------

constexpr float kOne = 1.0f, kZero = 0.0f;

void CudaEngine::conv_forward(cudnnTensorDescriptor_t xd, const float* x, cudnnFilterDescriptor_t wd, const float* w,
                              cudnnConvolutionFwdAlgo_t algo, cudnnTensorDescriptor_t yd, float* y) {
  CUDNN_CHECK(cudnnConvolutionForward(cudnn_.get(), &kOne, xd, x, wd, w, shapes_.conv.get(), algo, workspace_.get(),
                                      workspace_.bytes(), &kZero, yd, y));
}

// Row-major Y[n, out] = X[n, in] W[out, in]^T. cuBLAS is column-major: it sees X as the
// in x n matrix X^T and W as the in x out matrix W^T, so it computes Y^T = (W^T)^T X^T.
void CudaEngine::dense_forward(const float* x, const float* w, float* y, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne, w, in, x, in, &kZero, y, out));
}

// dW[out, in] = dY^T X; column-major: dW^T (in x out) = X^T (in x n) * dY (n x out).
void CudaEngine::dense_backward_weight(const float* x, const float* dy, float* dw, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &kOne, x, in, dy, out, &kZero, dw, in));
}

// dX[n, in] = dY W; column-major: dX^T (in x n) = W^T (in x out) * dY^T (out x n).
void CudaEngine::dense_backward_input(const float* w, const float* dy, float* dx, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &kOne, w, in, dy, out, &kZero, dx, in));
}

// --- forward / backward ----------------------------------------------------------------

void CudaEngine::forward(int n, const ConvPlan& p, const DeviceData& data, const int32_t* idx) {
  launch_gather_normalize(data.pixels.get(), data.labels.get(), idx, n, kImagePixels, x_.get(), labels_.get(), s());
  conv_forward(p.x.get(), x_.get(), shapes_.w1.get(), param(kConv1W), p.fwd1, p.a1.get(), a1_.get());
  launch_bias_activation(a1_.get(), param(kConv1B), n, kConv1Out, kConv1Side * kConv1Side, true, s());
  launch_maxpool2x2_forward(a1_.get(), p1_.get(), n, kConv1Out, kConv1Side, kConv1Side, s());
  conv_forward(p.p1.get(), p1_.get(), shapes_.w2.get(), param(kConv2W), p.fwd2, p.a2.get(), a2_.get());
  launch_bias_activation(a2_.get(), param(kConv2B), n, kConv2Out, kConv2Side * kConv2Side, true, s());
  launch_maxpool2x2_forward(a2_.get(), p2_.get(), n, kConv2Out, kConv2Side, kConv2Side, s());
  // NCHW pooled output is already flatten's C,H,W order.
  dense_forward(p2_.get(), param(kFc1W), h_.get(), n, kFlat, kHidden);
  launch_bias_activation(h_.get(), param(kFc1B), n, kHidden, 1, true, s());
  dense_forward(h_.get(), param(kFc2W), logits_.get(), n, kHidden, kClasses);
  launch_bias_activation(logits_.get(), param(kFc2B), n, kClasses, 1, false, s());
}

// Expects dlogits_ (already scaled). Calls layer_ready(l) as soon as layer l's gradient
// range (layer_range) is final, for the overlapped all-reduce.
template <typename LayerReady>
void CudaEngine::backward(int n, const ConvPlan& p, LayerReady&& layer_ready) {
  launch_relu_bias_backward(dlogits_.get(), nullptr, n, kClasses, 1, grad(kFc2B), s());
  dense_backward_weight(h_.get(), dlogits_.get(), grad(kFc2W), n, kHidden, kClasses);
  layer_ready(0);
  dense_backward_input(param(kFc2W), dlogits_.get(), dh_.get(), n, kHidden, kClasses);

  launch_relu_bias_backward(dh_.get(), h_.get(), n, kHidden, 1, grad(kFc1B), s());
  dense_backward_weight(p2_.get(), dh_.get(), grad(kFc1W), n, kFlat, kHidden);
  layer_ready(1);
  dense_backward_input(param(kFc1W), dh_.get(), dp2_.get(), n, kFlat, kHidden);

  // Writes all of da2, including the zero gradient of the row and column floor pooling drops.
  launch_maxpool2x2_backward(a2_.get(), dp2_.get(), da2_.get(), n, kConv2Out, kConv2Side, kConv2Side, s());
  launch_relu_bias_backward(da2_.get(), a2_.get(), n, kConv2Out, kConv2Side * kConv2Side, grad(kConv2B), s());
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_.get(), &kOne, p.p1.get(), p1_.get(), p.a2.get(), da2_.get(),
                                             shapes_.conv.get(), p.bwd_filter2, workspace_.get(), workspace_.bytes(),
                                             &kZero, shapes_.w2.get(), grad(kConv2W)));
  layer_ready(2);
  CUDNN_CHECK(cudnnConvolutionBackwardData(cudnn_.get(), &kOne, shapes_.w2.get(), param(kConv2W), p.a2.get(),
                                           da2_.get(), shapes_.conv.get(), p.bwd_data2, workspace_.get(),
                                           workspace_.bytes(), &kZero, p.p1.get(), dp1_.get()));

  launch_maxpool2x2_backward(a1_.get(), dp1_.get(), da1_.get(), n, kConv1Out, kConv1Side, kConv1Side, s());
  launch_relu_bias_backward(da1_.get(), a1_.get(), n, kConv1Out, kConv1Side * kConv1Side, grad(kConv1B), s());
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_.get(), &kOne, p.x.get(), x_.get(), p.a1.get(), da1_.get(),
                                             shapes_.conv.get(), p.bwd_filter1, workspace_.get(), workspace_.bytes(),
                                             &kZero, shapes_.w1.get(), grad(kConv1W)));
  layer_ready(3);
}

BatchStats CudaEngine::finish_stats(int64_t samples) {
  CUDA_CHECK(cudaMemcpyAsync(stats_host_.get(), stats_dev_.get(), 2 * sizeof(double), cudaMemcpyDeviceToHost, s()));
  CUDA_CHECK(cudaStreamSynchronize(s()));
  BatchStats st;
  st.loss_sum = stats_host_[0];
  st.correct = std::llround(stats_host_[1]);
  st.samples = samples;
  return st;
}

// Any number of samples, like the CPU engines: beyond max_batch in chunks whose gradients are
// summed (the trainer never asks for that; tests and tools may).
// Host timing of queued device work would measure nothing: `times` is left alone.
BatchStats CudaEngine::forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes*) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(indices, train_, false);
  const std::size_t total = indices.size(), chunk = std::size_t(max_batch_);
  if (total == 0) {
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(stats_dev_.get(), 0, stats_dev_.bytes(), s()));
    return finish_stats(0);
  }
  if (total > chunk && grad_sum_.size() == 0) grad_sum_.allocate(kParamCount);
  for (std::size_t off = 0; off < total; off += chunk) {
    const int n = static_cast<int>(std::min(chunk, total - off));
    const ConvPlan& plan = plan_for(n);
    stage_step(indices.subspan(off, std::size_t(n)), grad_scale, AdamConfig{}, 0.0f);
    forward(n, plan, train_, indices_dev());
    launch_softmax_xent(logits_.get(), labels_.get(), n, kClasses, grad_scale_dev(), dlogits_.get(), stats_dev_.get(),
                        off > 0, s());
    backward(n, plan, [](int) {});
    if (total > chunk) {
      if (off == 0) {
        CUDA_CHECK(cudaMemcpyAsync(grad_sum_.get(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
      } else {
        CUBLAS_CHECK(cublasSaxpy(cublas_.get(), static_cast<int>(kParamCount), &kOne, grads_.get(), 1, grad_sum_.get(), 1));
      }
      // The next chunk's indices go through the same pinned staging buffer.
      if (off + chunk < total) CUDA_CHECK(cudaStreamSynchronize(s()));
    }
  }
  if (total > chunk)
    CUDA_CHECK(cudaMemcpyAsync(grads_.get(), grad_sum_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
  return finish_stats(static_cast<int64_t>(total));
}

void CudaEngine::apply_adam(const AdamConfig& cfg, int64_t step) {
  const float lr_t = adam_step_size(cfg, step);
  CUDA_CHECK(cudaSetDevice(device_));
  stage_step({}, 1.0f, cfg, lr_t);
  launch_adam(params_.get(), grads_.get(), m_.get(), v_.get(), kParamCount, scalars_dev(), s());
  CUDA_CHECK(cudaStreamSynchronize(s()));
}

// --- the training step -----------------------------------------------------------------

void CudaEngine::enqueue_allreduce(int layer, Communicator& comm, bool timed, bool capturing) {
  cudaStream_t cs = static_cast<cudaStream_t>(comm.stream());
  CUDA_CHECK(cudaEventRecord(layer_ready_[layer].get(), s()));
  CUDA_CHECK(cudaStreamWaitEvent(cs, layer_ready_[layer].get(), 0));
  // Under capture only "external" event records become graph nodes that time the replay.
  auto mark = [&](const Event& e) {
    if (capturing) CUDA_CHECK(cudaEventRecordWithFlags(e.get(), cs, cudaEventRecordExternal));
    else CUDA_CHECK(cudaEventRecord(e.get(), cs));
  };
  if (timed) mark(ar_begin_[layer]);
  const Range r = layer_range(layer);
  comm.all_reduce_sum(grads_.get() + r.offset, r.count);
  if (timed) mark(ar_end_[layer]);
}

void CudaEngine::enqueue_train_step(int n, const ConvPlan* plan, Communicator* comm, bool timed, bool capturing) {
  auto ready = [&](int layer) {
    if (comm) enqueue_allreduce(layer, *comm, timed, capturing);
  };
  if (n == 0) {
    // No samples, but the collective still needs this rank: contribute zeros.
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(stats_dev_.get(), 0, stats_dev_.bytes(), s()));
    for (int l = 0; l < kLayers; ++l) ready(l);
  } else {
    forward(n, *plan, train_, indices_dev());
    launch_softmax_xent(logits_.get(), labels_.get(), n, kClasses, grad_scale_dev(), dlogits_.get(),
                        stats_dev_.get(), false, s());
    backward(n, *plan, ready);
  }
  if (comm) {
    CUDA_CHECK(cudaEventRecord(comm_done_.get(), static_cast<cudaStream_t>(comm->stream())));
    CUDA_CHECK(cudaStreamWaitEvent(s(), comm_done_.get(), 0));
  }
  launch_adam(params_.get(), grads_.get(), m_.get(), v_.get(), kParamCount, scalars_dev(), s());
}

// Whether event-record nodes in a graph give usable timestamps here: probed once with a
// two-node graph before the first real capture, so a "no" costs no training step.
bool CudaEngine::graph_timing_supported() {
  if (graph_timing_ >= 0) return graph_timing_ == 1;
  graph_timing_ = 0;
  cudaGraph_t raw = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool ok = cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (ok) {
    const bool recorded =
        cudaEventRecordWithFlags(probe_begin_.get(), s(), cudaEventRecordExternal) == cudaSuccess &&
        cudaEventRecordWithFlags(probe_end_.get(), s(), cudaEventRecordExternal) == cudaSuccess;
    ok = cudaStreamEndCapture(s(), &raw) == cudaSuccess && recorded && raw != nullptr;
  }
  Graph graph(raw);
  float ms = 0;
  ok = ok && cudaGraphInstantiate(&exec, raw, 0) == cudaSuccess;
  GraphExec owned(exec);
  ok = ok && cudaGraphLaunch(exec, s()) == cudaSuccess && cudaStreamSynchronize(s()) == cudaSuccess &&
       cudaEventElapsedTime(&ms, probe_begin_.get(), probe_end_.get()) == cudaSuccess;
  cudaGetLastError();
  graph_timing_ = ok ? 1 : 0;
  if (!ok) spdlog::debug("{}: no timing events inside CUDA graphs; all-reduce time not measured", name_);
  return ok;
}

CudaEngine::CapturedStep CudaEngine::capture_step(int n, const ConvPlan& plan, Communicator* comm) {
  const bool timed = comm != nullptr && graph_timing_supported();
  cudaGraph_t raw = nullptr;
  // Thread-local: other replicas' threads keep working (and allocating) while this one captures.
  CUDA_CHECK(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  try {
    enqueue_train_step(n, &plan, comm, timed, true);
  } catch (...) {
    cudaStreamEndCapture(s(), &raw);
    if (raw) cudaGraphDestroy(raw);
    cudaGetLastError();
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(s(), &raw));
  Graph graph(raw);
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, raw, 0));
  return CapturedStep{GraphExec(exec), timed};
}

double CudaEngine::allreduce_seconds() {
  double total_ms = 0;
  for (int l = 0; l < kLayers; ++l) {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, ar_begin_[l].get(), ar_end_[l].get()) == cudaSuccess) total_ms += ms;
  }
  cudaGetLastError();
  return total_ms / 1000.0;
}

void CudaEngine::train_step(const TrainStep& st, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) {
  const float lr_t = adam_step_size(cfg, st.adam_step);
  CUDA_CHECK(cudaSetDevice(device_));
  const int n = check_indices(st.indices, train_, true);
  Communicator* reduce = nullptr;
  if (comm.size() > 1) {
    MB_CHECK(comm.memory_space() == MemorySpace::CudaDevice && comm.stream() != nullptr, ConfigError,
             "{}: the '{}' communicator reduces host memory; CUDA replicas need 'nccl' or 'in-gpu'", name_,
             comm.name());
    reduce = &comm;
  }
  const ConvPlan* plan = n > 0 ? &plan_for(n) : nullptr;
  // Eager, before any capture or replay, and never part of a graph: a captured copy from
  // pinned memory would read the pinned buffer at each replay. The graph reads only the
  // device copy, which this stream-ordered copy has refreshed by the time the graph runs.
  stage_step(st.indices, st.grad_scale, cfg, lr_t);

  // Graphs only where a captured step stays valid on replay: a single replica, or a
  // communicator whose collectives may be captured (NCCL). The in-GPU host rendezvous is not.
  const bool graphable = use_graphs_ && n > 0 && (reduce == nullptr || reduce->graph_capturable());
  bool launched = false, timed = reduce != nullptr;
  if (graphable) {
    if (graph_comm_ != &comm) {
      drop_graphs();
      graph_comm_ = &comm;
    }
    auto it = graphs_.find(n);
    // The first step of each size runs eagerly: it loads kernels, lets cuDNN build its
    // internal plans and NCCL connect, none of which may happen under capture.
    if (it == graphs_.end() && warmed_.count(n)) {
      try {
        it = graphs_.emplace(n, capture_step(n, *plan, reduce)).first;
        spdlog::debug("{}: captured the training step for batch {} into a CUDA graph", name_, n);
      } catch (const DeviceError& e) {
        spdlog::warn("{}: CUDA graph capture failed, continuing without graphs: {}", name_, e.what());
        drop_graphs();
        use_graphs_ = false;
      }
    }
    if (it != graphs_.end()) {
      CUDA_CHECK(cudaGraphLaunch(it->second.exec.get(), s()));
      launched = true;
      timed = it->second.timed;
    } else {
      warmed_.insert(n);
    }
  }
  if (!launched) enqueue_train_step(n, plan, reduce, timed, false);
  pending_ += finish_stats(n);
  if (timed) times.allreduce_s += allreduce_seconds();
}

BatchStats CudaEngine::evaluate_on(const DeviceData& data, std::span<const int32_t> indices) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(indices, data, false);
  const std::size_t total = indices.size();
  if (total == 0) return {};
  if (eval_idx_.size() < total) eval_idx_.allocate(total);
  CUDA_CHECK(cudaMemcpyAsync(eval_idx_.get(), indices.data(), total * sizeof(int32_t), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(stats_dev_.get(), 0, stats_dev_.bytes(), s()));
  for (std::size_t off = 0; off < total; off += std::size_t(max_batch_)) {
    const int n = static_cast<int>(std::min<std::size_t>(std::size_t(max_batch_), total - off));
    const ConvPlan& plan = plan_for(n);
    forward(n, plan, data, eval_idx_.get() + off);
    launch_softmax_xent(logits_.get(), labels_.get(), n, kClasses, nullptr, nullptr, stats_dev_.get(), true, s());
  }
  return finish_stats(static_cast<int64_t>(total));
}

}  // namespace

std::unique_ptr<ReplicaEngine> make_cuda_engine(int device, int max_batch) {
  return std::make_unique<CudaEngine>(device, max_batch);
}

}  // namespace mb::cuda

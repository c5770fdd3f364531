// The CUDA replica engine: the whole model on one GPU. cuDNN for the convolutions, cuBLAS
// for the dense layers (row-major [out, in] weights seen by column-major cuBLAS as
// their transpose), own kernels for everything else (kernels.h). Parameters, gradients and
// Adam moments are each ONE flat device buffer in cnn_spec's layout, so the all-reduce and
// the optimizer see a single range. Both data sets live on the device as uint8, and so does
// each epoch's training order (begin_epoch): a step reads its indices from there.
//
// The GPU runs ahead of the host. A training step only enqueues work: no copy, no wait. The
// step's statistics accumulate on the device and are read at the trainer's reporting tick
// (steps_per_report) or the end of the epoch; the per-step values (where the indices start,
// 1/global batch, Adam's step size) are kernel arguments, which a replayed graph gets through
// cudaGraphExecKernelNodeSetParams. Waits poll (device_wait.h), so a failing peer ends them.
//
// The gradient all-reduce runs in two buckets on the communicator's stream, overlapped with
// backward: everything but conv1 as soon as conv2's weight gradient exists (it then overlaps
// conv2's data gradient and all of conv1's backward), conv1's 320 floats at the end.
//
// warm_up (untimed, collective) prepares every step shape of the run: plans, kernels, NCCL's
// connections, and the CUDA graphs the ranks agree on (step_graphs.h: the same choice on every
// rank, keyed on the global batch); then it measures the all-reduce's exposed cost and
// bandwidth (CommProfile) and restores parameters, moments and statistics.
// MIRRORBENCH_NO_GRAPH=1 keeps every step eager on every rank, for debugging.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/cudnn_plan.h"
#include "backends/cuda/device_select.h"
#include "backends/cuda/kernels.h"
#include "backends/common/device_wait.h"
#include "backends/common/step_graphs.h"
#include "model/cnn_spec.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb::cuda {
namespace {

using namespace cnn;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;   // NVIDIA's recommendation for Hopper
constexpr std::size_t kMinCudnnWorkspace = std::size_t(64) << 20;
// Statistics are read every this many steps (and at the end of each epoch): 469 steps of an
// epoch at batch 128 make 8 reports, each a short stall while the host reads 16 bytes.
constexpr int kStepsPerReport = 64;
// Steps per variant in the warm-up's communication profile.
constexpr int kProfileSteps = 20;

// Gradient buckets in the order backward completes them (the flat layout back to front).
constexpr int kBuckets = 2;
struct Range {
  std::size_t offset, count;
};
Range bucket_range(int bucket) {
  const std::size_t conv2 = param_tensors()[kConv2W].offset;
  return bucket == 0 ? Range{conv2, kParamCount - conv2} : Range{0, conv2};
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

bool event_done(cudaEvent_t e) {
  const cudaError_t r = cudaEventQuery(e);
  if (r == cudaSuccess) return true;
  if (r == cudaErrorNotReady) return false;
  CUDA_CHECK(r);
  return false;
}

struct DeviceData {
  DeviceBuffer<uint8_t> pixels, labels;
  int64_t count = 0;
  std::string name;
};

// The arguments of the three kernels that change from step to step (kernels.h).
struct StepKernelArgs {
  GatherArgs gather;
  SoftmaxArgs softmax;
  AdamArgs adam;
};

// One captured training step of one global batch, with its updatable nodes.
struct StepGraph {
  Graph graph;
  GraphExec exec;
  int n = 0;
  cudaGraphNode_t gather = nullptr, softmax = nullptr, adam = nullptr;
};

class CudaEngine final : public ReplicaEngine {
 public:
  CudaEngine(int device, int max_batch, Precision precision);
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
  void begin_epoch(std::span<const int32_t> order) override;
  void warm_up(std::span<const StepShape> shapes, Communicator& comm) override;
  void train_step(const TrainStep& step, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) override;
  BatchStats take_train_stats() override;
  CommProfile comm_profile() const override { return profile_; }
  int steps_per_report() const override { return kStepsPerReport; }
  BatchStats evaluate(std::span<const int32_t> indices) override { return evaluate_on(val_, indices); }
  BatchStats evaluate_train(std::span<const int32_t> indices) override { return evaluate_on(train_, indices); }
  void synchronize() override;

 private:
  cudaStream_t s() const { return stream_.get(); }
  float* param(ParamId id) const { return params_.get() + param_tensors()[id].offset; }
  float* grad(ParamId id) const { return grads_.get() + param_tensors()[id].offset; }

  void check_indices(std::span<const int32_t> indices, const DeviceData& data) const;
  const int32_t* stage_indices(std::span<const int32_t> indices, const DeviceData& data);
  const int32_t* step_indices(const TrainStep& st);
  ConvPlan& plan_for(int n);
  void upload(const Dataset& d, DeviceData& out, const char* role);
  Communicator* reducer(Communicator& comm) const;

  // Waits (polling) until everything queued on the stream has run. Const: the waits of the
  // const getters; the failure path it may take changes only what failure changes.
  void wait_device() const;
  void release_after_failure() const;

  StepKernelArgs step_args(int n, const int32_t* idx, float grad_scale, float lr_t, const AdamConfig& cfg,
                           double* stats) const;
  // Enqueue only (no host waits): usable eagerly and under stream capture.
  void forward(int n, const ConvPlan& plan, const GatherArgs& gather);
  template <typename BucketReady>
  void backward(int n, const ConvPlan& plan, BucketReady&& ready);
  void enqueue_step(int n, const StepKernelArgs& k, Communicator* comm);
  void enqueue_allreduce(int bucket, Communicator& comm);

  void conv_forward(cudnnTensorDescriptor_t xd, const float* x, cudnnFilterDescriptor_t wd, const float* w,
                    cudnnConvolutionFwdAlgo_t algo, cudnnTensorDescriptor_t yd, float* y);
  void dense_forward(const float* x, const float* w, float* y, int n, int in, int out);
  void dense_backward_weight(const float* x, const float* dy, float* dw, int n, int in, int out);
  void dense_backward_input(const float* w, const float* dy, float* dx, int n, int in, int out);

  StepGraph capture_step(int n, const StepKernelArgs& k, Communicator* comm);
  void launch_graph(StepGraph& g, const StepKernelArgs& k);
  void drop_graphs() const;
  void profile_communication(const StepShape& shape, Communicator& comm);
  double time_steps(int steps, const std::function<void()>& step);
  BatchStats read_stats(DeviceBuffer<double>& stats, int64_t samples, bool reset);
  BatchStats evaluate_on(const DeviceData& data, std::span<const int32_t> indices);

  const int device_;
  const int max_batch_;
  const Precision precision_;
  std::string name_;
  bool use_graphs_ = true;

  // Declaration order = reverse destruction order: streams outlive handles, handles outlive
  // buffers and graphs.
  Stream stream_;
  CublasHandle cublas_;
  CudnnHandle cudnn_;
  ConvShapes shapes_;
  std::vector<Event> bucket_ready_;
  Event comm_done_, sync_, time_begin_, time_end_;

  DeviceBuffer<float> cublas_workspace_, workspace_;
  std::vector<DeviceBuffer<float>> retired_workspaces_;   // still referenced by captured graphs
  DeviceBuffer<float> params_, grads_, m_, v_;
  DeviceBuffer<float> backup_;                            // params, m, v across warm_up
  DeviceBuffer<float> grad_sum_;                          // forward_backward beyond max_batch only
  DeviceBuffer<float> profile_buffer_;                    // the bare all-reduce of the profile
  mutable PinnedBuffer<float> params_host_;               // get_params/get_grads staging
  DeviceBuffer<double> train_stats_, call_stats_, warm_stats_;   // loss sum, correct count
  PinnedBuffer<double> stats_host_;
  DeviceBuffer<double> softmax_partials_, bias1_partials_, bias2_partials_;
  DeviceBuffer<unsigned> counters_;                       // softmax, bias1, bias2 (zero between launches)
  DeviceBuffer<int32_t> order_dev_, stage_idx_, warm_idx_, eval_idx_, labels_;
  DeviceBuffer<float> x_, c1_, p1_, c2_, p2_, h_, logits_;   // forward (c*: conv output, then its gradient)
  DeviceBuffer<uint8_t> arg1_, arg2_;                         // pooling argmax
  DeviceBuffer<float> dlogits_, dh_, dp2_, dp1_;
  DeviceData train_, val_;
  std::vector<int32_t> order_host_;                       // this epoch's order, as uploaded

  std::map<int, ConvPlan> plans_;
  mutable std::map<int64_t, StepGraph> graphs_;           // by global batch, agreed in warm_up
  mutable const Communicator* graph_comm_ = nullptr;      // the communicator they captured
  mutable Communicator* comm_ = nullptr;                  // of the last step or warm-up (outlives us)
  mutable bool failed_ = false;                           // device work was cancelled
  int64_t pending_samples_ = 0;                           // in train_stats_
  CommProfile profile_;
};

CudaEngine::CudaEngine(int device, int max_batch, Precision precision)
    : device_(device), max_batch_(max_batch), precision_(precision) {
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
    // FP32: cuBLAS's default math mode never rounds FP32 inputs to TF32, like the CPU
    // engines. TF32: tensor cores with FP32 accumulation.
    CUBLAS_CHECK(cublasSetMathMode(cublas_.get(),
                                   precision == Precision::Tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    cudnn_ = make_cudnn();
    CUDNN_CHECK(cudnnSetStream(cudnn_.get(), s()));
    shapes_ = ConvShapes::make(precision);

    for (int b = 0; b < kBuckets; ++b) bucket_ready_.push_back(make_event(false));
    comm_done_ = make_event(false);
    sync_ = make_event(false);
    time_begin_ = make_event(true);
    time_end_ = make_event(true);

    params_.allocate(kParamCount);
    grads_.allocate(kParamCount);
    m_.allocate(kParamCount);
    v_.allocate(kParamCount);
    params_host_ = PinnedBuffer<float>(kParamCount);
    for (auto* st : {&train_stats_, &call_stats_, &warm_stats_}) st->allocate(2);
    stats_host_ = PinnedBuffer<double>(2);

    const std::size_t b = std::size_t(max_batch);
    const int mb = max_batch;
    softmax_partials_.allocate(std::size_t(softmax_partials(mb)));
    bias1_partials_.allocate(std::size_t(bias_grad_partials(mb, kConv1Out, kConv1Side, kConv1Side)));
    bias2_partials_.allocate(std::size_t(bias_grad_partials(mb, kConv2Out, kConv2Side, kConv2Side)));
    counters_.allocate(3);
    stage_idx_.allocate(b);
    labels_.allocate(b);
    x_.allocate(b * kImagePixels);
    c1_.allocate(b * kConv1Out * kConv1Side * kConv1Side);
    p1_.allocate(b * kConv1Out * kPool1Side * kPool1Side);
    arg1_.allocate(p1_.size());
    c2_.allocate(b * kConv2Out * kConv2Side * kConv2Side);
    p2_.allocate(b * kFlat);
    arg2_.allocate(p2_.size());
    h_.allocate(b * kHidden);
    logits_.allocate(b * kClasses);
    dlogits_.allocate(b * kClasses);
    dh_.allocate(b * kHidden);
    dp2_.allocate(p2_.size());
    dp1_.allocate(p1_.size());

    for (auto* buf : {&params_, &grads_, &m_, &v_})
      CUDA_CHECK(cudaMemsetAsync(buf->get(), 0, buf->bytes(), s()));
    for (auto* st : {&train_stats_, &call_stats_, &warm_stats_})
      CUDA_CHECK(cudaMemsetAsync(st->get(), 0, st->bytes(), s()));
    CUDA_CHECK(cudaMemsetAsync(counters_.get(), 0, counters_.bytes(), s()));
    CUDA_CHECK(cudaStreamSynchronize(s()));   // nothing else exists yet that could fail
  } catch (const DeviceError& e) {
    throw DeviceError(fmt::format("cuda:{}: {}", device, e.what()));
  }
  spdlog::debug("{}: engine ready (max batch {}, {}, CUDA graphs {})", name_, max_batch_, to_string(precision_),
                use_graphs_ ? "on" : "off");
}

CudaEngine::~CudaEngine() {
  // Errors are ignored: this also runs while unwinding from a device failure. A queue that
  // still holds a collective a failed peer never joins is cancelled through the
  // communicator (wait_device's failure path) before anything is freed: cudaFree would wait
  // for it forever.
  cudaSetDevice(device_);
  if (stream_) {
    try {
      if (!failed_) wait_device();
    } catch (...) {
    }
    // After a cancellation the queue drains on its own; bounded, so a broken device cannot
    // hold the process.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    bool drained = cudaEventRecord(sync_.get(), s()) != cudaSuccess;
    while (!drained && Clock::now() < deadline) {
      const cudaError_t r = cudaEventQuery(sync_.get());
      drained = r != cudaErrorNotReady;
      if (!drained) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (!drained) spdlog::warn("{}: device work still running at shutdown", name_);
  }
  drop_graphs();
  cudaGetLastError();
}

void CudaEngine::drop_graphs() const {
  graphs_.clear();
  graph_comm_ = nullptr;
}

void CudaEngine::release_after_failure() const {
  // Graphs first: NCCL's abort waits for the graphs that captured its collectives.
  drop_graphs();
  failed_ = true;
  if (comm_) comm_->cancel_device_work();
}

void CudaEngine::wait_device() const {
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaEventRecord(sync_.get(), s()));
  wait_polling([this] { return event_done(sync_.get()); }, comm_, [this] { release_after_failure(); });
}

void CudaEngine::synchronize() { wait_device(); }

Communicator* CudaEngine::reducer(Communicator& comm) const {
  if (comm.size() == 1) return nullptr;
  MB_CHECK(comm.memory_space() == MemorySpace::CudaDevice && comm.stream() != nullptr, ConfigError,
           "{}: the '{}' communicator reduces host memory; CUDA replicas need 'nccl' or 'in-gpu'", name_,
           comm.name());
  return &comm;
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
  wait_device();
  order_host_.clear();
  upload(train, train_, "training");
  upload(val, val_, "validation");
  wait_device();
}

void CudaEngine::set_params(std::span<const float> params) {
  MB_CHECK(params.size() == kParamCount, Error, "{}: set_params got {} floats, the model has {}", name_,
           params.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(params_.get(), params.data(), params_.bytes(), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), s()));
  CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), s()));
  wait_device();
}

void CudaEngine::get_params(std::span<float> params) const {
  MB_CHECK(params.size() == kParamCount, Error, "{}: get_params got room for {} floats, the model has {}", name_,
           params.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  // Through pinned memory: a copy into pageable memory would block in the driver until the
  // whole queue ran, where a failed peer could hold it forever.
  CUDA_CHECK(cudaMemcpyAsync(params_host_.get(), params_.get(), params_.bytes(), cudaMemcpyDeviceToHost, s()));
  wait_device();
  std::memcpy(params.data(), params_host_.get(), params_.bytes());
}

void CudaEngine::get_grads(std::span<float> grads) const {
  MB_CHECK(grads.size() == kParamCount, Error, "{}: get_grads got room for {} floats, the model has {}", name_,
           grads.size(), kParamCount);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(params_host_.get(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToHost, s()));
  wait_device();
  std::memcpy(grads.data(), params_host_.get(), grads_.bytes());
}

void CudaEngine::check_indices(std::span<const int32_t> indices, const DeviceData& data) const {
  if (indices.empty()) return;
  MB_CHECK(data.count > 0, ConfigError, "{}: no {} data bound (call bind_data first)", name_,
           data.name.empty() ? "such" : data.name);
  for (int32_t i : indices) {
    // An out-of-range index would be an illegal address on the device, which poisons the
    // whole CUDA context: refuse it here.
    MB_CHECK(i >= 0 && i < data.count, ConfigError, "{}: sample index {} outside {} ({} images)", name_, i, data.name,
             data.count);
  }
}

// Indices that are not (known to be) in the epoch order on the device: a stream-ordered copy
// from pageable memory, which the driver stages at once, so the host may reuse `indices` and
// the next copy cannot overtake this step's gather.
const int32_t* CudaEngine::stage_indices(std::span<const int32_t> indices, const DeviceData& data) {
  check_indices(indices, data);
  MB_CHECK(indices.size() <= stage_idx_.size(), Error, "{}: {} indices exceed the staging buffer of {}", name_,
           indices.size(), stage_idx_.size());
  if (!indices.empty())
    CUDA_CHECK(cudaMemcpyAsync(stage_idx_.get(), indices.data(), indices.size() * sizeof(int32_t),
                               cudaMemcpyHostToDevice, s()));
  return stage_idx_.get();
}

const int32_t* CudaEngine::step_indices(const TrainStep& st) {
  const std::size_t n = st.indices.size(), at = static_cast<std::size_t>(std::max<int64_t>(0, st.order_offset));
  // The trainer's steps are slices of the order given to begin_epoch: read them on the
  // device. Anything else (tests, tools) is staged.
  if (n > 0 && st.order_offset >= 0 && at + n <= order_host_.size() &&
      std::equal(st.indices.begin(), st.indices.end(), order_host_.begin() + std::ptrdiff_t(at)))
    return order_dev_.get() + at;
  return stage_indices(st.indices, train_);
}

void CudaEngine::begin_epoch(std::span<const int32_t> order) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(order, train_);   // once per epoch instead of every step
  if (order_dev_.size() < order.size()) {
    wait_device();   // the old buffer may still be read by queued steps
    order_dev_.allocate(order.size());
  }
  order_host_.assign(order.begin(), order.end());
  if (!order.empty())
    CUDA_CHECK(cudaMemcpyAsync(order_dev_.get(), order.data(), order.size_bytes(), cudaMemcpyHostToDevice, s()));
}

ConvPlan& CudaEngine::plan_for(int n) {
  auto it = plans_.find(n);
  if (it == plans_.end()) it = plans_.emplace(n, make_conv_plan(cudnn_.get(), shapes_, n)).first;
  const std::size_t need = it->second.workspace_bytes;
  if (need > workspace_.bytes()) {
    // Captured graphs and queued steps hold the old workspace's address: it is retired, not
    // freed, so no rank ever has to drop its graphs (or wait) because a plan grew.
    if (workspace_.size() > 0) retired_workspaces_.push_back(std::move(workspace_));
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

// Up to the fc2 logits without their bias (the softmax kernel adds it).
void CudaEngine::forward(int n, const ConvPlan& p, const GatherArgs& gather) {
  launch_gather_normalize(gather, s());
  conv_forward(p.x.get(), x_.get(), shapes_.w1.get(), param(kConv1W), p.fwd1, p.a1.get(), c1_.get());
  launch_bias_relu_pool(c1_.get(), param(kConv1B), p1_.get(), arg1_.get(), n, kConv1Out, kConv1Side, kConv1Side, s());
  conv_forward(p.p1.get(), p1_.get(), shapes_.w2.get(), param(kConv2W), p.fwd2, p.a2.get(), c2_.get());
  launch_bias_relu_pool(c2_.get(), param(kConv2B), p2_.get(), arg2_.get(), n, kConv2Out, kConv2Side, kConv2Side, s());
  // NCHW pooled output is already flatten's C,H,W order.
  dense_forward(p2_.get(), param(kFc1W), h_.get(), n, kFlat, kHidden);
  launch_bias_relu(h_.get(), param(kFc1B), n, kHidden, s());
  dense_forward(h_.get(), param(kFc2W), logits_.get(), n, kHidden, kClasses);
}

// Expects dlogits_ (already scaled). Calls ready(b) as soon as bucket b's gradient range
// (bucket_range) is final, for the overlapped all-reduce. The convolution outputs' buffers
// receive their gradients (the outputs themselves are dead after the forward epilogues).
template <typename BucketReady>
void CudaEngine::backward(int n, const ConvPlan& p, BucketReady&& ready) {
  unsigned* counter = counters_.get();
  launch_dense_bias_backward(dlogits_.get(), nullptr, n, kClasses, grad(kFc2B), s());
  dense_backward_weight(h_.get(), dlogits_.get(), grad(kFc2W), n, kHidden, kClasses);
  dense_backward_input(param(kFc2W), dlogits_.get(), dh_.get(), n, kHidden, kClasses);

  launch_dense_bias_backward(dh_.get(), h_.get(), n, kHidden, grad(kFc1B), s());
  dense_backward_weight(p2_.get(), dh_.get(), grad(kFc1W), n, kFlat, kHidden);
  dense_backward_input(param(kFc1W), dh_.get(), dp2_.get(), n, kFlat, kHidden);

  float* dc2 = c2_.get();
  launch_pool_relu_bias_backward(dp2_.get(), p2_.get(), arg2_.get(), dc2, grad(kConv2B), bias2_partials_.get(),
                                 counter + 2, n, kConv2Out, kConv2Side, kConv2Side, s());
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_.get(), &kOne, p.p1.get(), p1_.get(), p.a2.get(), dc2,
                                             shapes_.conv.get(), p.bwd_filter2, workspace_.get(), workspace_.bytes(),
                                             &kZero, shapes_.w2.get(), grad(kConv2W)));
  ready(0);
  CUDNN_CHECK(cudnnConvolutionBackwardData(cudnn_.get(), &kOne, shapes_.w2.get(), param(kConv2W), p.a2.get(), dc2,
                                           shapes_.conv.get(), p.bwd_data2, workspace_.get(), workspace_.bytes(),
                                           &kZero, p.p1.get(), dp1_.get()));

  float* dc1 = c1_.get();
  launch_pool_relu_bias_backward(dp1_.get(), p1_.get(), arg1_.get(), dc1, grad(kConv1B), bias1_partials_.get(),
                                 counter + 1, n, kConv1Out, kConv1Side, kConv1Side, s());
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_.get(), &kOne, p.x.get(), x_.get(), p.a1.get(), dc1,
                                             shapes_.conv.get(), p.bwd_filter1, workspace_.get(), workspace_.bytes(),
                                             &kZero, shapes_.w1.get(), grad(kConv1W)));
  ready(1);
}

StepKernelArgs CudaEngine::step_args(int n, const int32_t* idx, float grad_scale, float lr_t, const AdamConfig& cfg,
                                     double* stats) const {
  StepKernelArgs k;
  k.gather = GatherArgs{train_.pixels.get(), train_.labels.get(), idx, n, x_.get(), labels_.get()};
  k.softmax = SoftmaxArgs{logits_.get(), param(kFc2B), labels_.get(), n, kClasses, grad_scale, dlogits_.get(),
                          softmax_partials_.get(), counters_.get(), stats};
  k.adam = AdamArgs{params_.get(), grads_.get(), m_.get(), v_.get(), static_cast<int>(kParamCount), lr_t,
                    cfg.beta1, cfg.beta2, cfg.epsilon};
  return k;
}

void CudaEngine::enqueue_allreduce(int bucket, Communicator& comm) {
  cudaStream_t cs = static_cast<cudaStream_t>(comm.stream());
  CUDA_CHECK(cudaEventRecord(bucket_ready_[bucket].get(), s()));
  CUDA_CHECK(cudaStreamWaitEvent(cs, bucket_ready_[bucket].get(), 0));
  const Range r = bucket_range(bucket);
  comm.all_reduce_sum(grads_.get() + r.offset, r.count);
}

void CudaEngine::enqueue_step(int n, const StepKernelArgs& k, Communicator* comm) {
  auto ready = [&](int bucket) {
    if (comm) enqueue_allreduce(bucket, *comm);
  };
  if (n == 0) {
    // No samples, but the collective still needs this rank: contribute zeros.
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    for (int b = 0; b < kBuckets; ++b) ready(b);
  } else {
    const ConvPlan& plan = plans_.at(n);
    forward(n, plan, k.gather);
    launch_softmax_xent(k.softmax, s());
    backward(n, plan, ready);
  }
  if (comm) {
    CUDA_CHECK(cudaEventRecord(comm_done_.get(), static_cast<cudaStream_t>(comm->stream())));
    CUDA_CHECK(cudaStreamWaitEvent(s(), comm_done_.get(), 0));
  }
  launch_adam(k.adam, s());
}

// --- graphs ----------------------------------------------------------------------------

StepGraph CudaEngine::capture_step(int n, const StepKernelArgs& k, Communicator* comm) {
  cudaGraph_t raw = nullptr;
  // Thread-local: other replicas' threads keep working (and allocating) while this one captures.
  CUDA_CHECK(cudaStreamBeginCapture(s(), cudaStreamCaptureModeThreadLocal));
  try {
    enqueue_step(n, k, comm);
  } catch (...) {
    cudaStreamEndCapture(s(), &raw);
    if (raw) cudaGraphDestroy(raw);
    cudaGetLastError();
    throw;
  }
  CUDA_CHECK(cudaStreamEndCapture(s(), &raw));
  StepGraph g;
  g.graph = Graph(raw);
  g.n = n;
  // The nodes whose arguments change per step, found by their kernel function. Library
  // kernels (cuDNN, cuBLAS, NCCL) may not report theirs: skipped.
  std::size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(raw, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CUDA_CHECK(cudaGraphGetNodes(raw, nodes.data(), &count));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    cudaKernelNodeParams p{};
    if (cudaGraphKernelNodeGetParams(node, &p) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (p.func == kernel_id(StepKernel::Gather)) g.gather = node;
    else if (p.func == kernel_id(StepKernel::Softmax)) g.softmax = node;
    else if (p.func == kernel_id(StepKernel::Adam)) g.adam = node;
  }
  MB_CHECK(g.adam != nullptr && (n == 0 || (g.gather != nullptr && g.softmax != nullptr)), DeviceError,
           "the captured step of batch {} lacks one of its gather, softmax and Adam nodes", n);
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, raw, 0));
  g.exec = GraphExec(exec);
  CUDA_CHECK(cudaGraphUpload(exec, s()));
  return g;
}

void CudaEngine::launch_graph(StepGraph& g, const StepKernelArgs& k) {
  if (g.gather) update_node(g.exec.get(), g.gather, k.gather);
  if (g.softmax) update_node(g.exec.get(), g.softmax, k.softmax);
  update_node(g.exec.get(), g.adam, k.adam);
  CUDA_CHECK(cudaGraphLaunch(g.exec.get(), s()));
}

// --- the training step -----------------------------------------------------------------

void CudaEngine::train_step(const TrainStep& st, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) {
  CUDA_CHECK(cudaSetDevice(device_));
  const int n = static_cast<int>(st.indices.size());
  MB_CHECK(st.indices.size() <= std::size_t(max_batch_), ConfigError,
           "{}: {} samples in one step, the engine was built for at most {}", name_, st.indices.size(), max_batch_);
  Communicator* reduce = reducer(comm);
  comm_ = &comm;
  try {
    comm.check();   // a failed peer: do not queue more work behind its collective
  } catch (...) {
    release_after_failure();
    throw;
  }
  const int32_t* idx = step_indices(st);
  const StepKernelArgs k = step_args(n, idx, st.grad_scale, adam_step_size(cfg, st.adam_step), cfg, train_stats_.get());

  // A graph exactly where every rank has one for this global batch (agreed in warm_up), so
  // all ranks make the same captured-or-eager choice for the step's collectives.
  auto it = graph_comm_ == &comm ? graphs_.find(st.global_batch) : graphs_.end();
  if (it != graphs_.end()) {
    MB_CHECK(it->second.n == n, Error, "{}: a step of global batch {} with {} samples here, warm_up prepared {}",
             name_, st.global_batch, n, it->second.n);
    launch_graph(it->second, k);
  } else {
    if (n > 0) plan_for(n);
    enqueue_step(n, k, reduce);
  }
  pending_samples_ += n;
  if (reduce) times.allreduce_s += profile_.exposed_s;
}

BatchStats CudaEngine::read_stats(DeviceBuffer<double>& stats, int64_t samples, bool reset) {
  CUDA_CHECK(cudaMemcpyAsync(stats_host_.get(), stats.get(), 2 * sizeof(double), cudaMemcpyDeviceToHost, s()));
  if (reset) CUDA_CHECK(cudaMemsetAsync(stats.get(), 0, stats.bytes(), s()));
  wait_device();
  BatchStats st;
  st.loss_sum = stats_host_[0];
  st.correct = std::llround(stats_host_[1]);
  st.samples = samples;
  return st;
}

BatchStats CudaEngine::take_train_stats() {
  CUDA_CHECK(cudaSetDevice(device_));
  const int64_t samples = std::exchange(pending_samples_, 0);
  return read_stats(train_stats_, samples, true);
}

// --- warm-up ---------------------------------------------------------------------------

double CudaEngine::time_steps(int steps, const std::function<void()>& step) {
  CUDA_CHECK(cudaEventRecord(time_begin_.get(), s()));
  for (int i = 0; i < steps; ++i) step();
  CUDA_CHECK(cudaEventRecord(time_end_.get(), s()));
  wait_device();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, time_begin_.get(), time_end_.get()));
  return ms / 1000.0;
}

// Collective. The step with its all-reduces against the same step without them (nccl-tests'
// and DDP's "exposed communication"), then the bare all-reduce of the whole gradient.
void CudaEngine::profile_communication(const StepShape& shape, Communicator& comm) {
  const int n = static_cast<int>(shape.share);
  const StepKernelArgs k =
      step_args(n, warm_idx_.get(), 1.0f / float(shape.global_batch), 0.0f, AdamConfig{}, warm_stats_.get());
  auto it = graph_comm_ == &comm ? graphs_.find(shape.global_batch) : graphs_.end();
  StepGraph* with = it != graphs_.end() ? &it->second : nullptr;
  // The variant without communication as a graph too, when the step runs as one: otherwise
  // the difference would be launch overhead, not communication. Local: no collective inside.
  StepGraph without;
  if (with) {
    try {
      without = capture_step(n, k, nullptr);
    } catch (const DeviceError& e) {
      spdlog::debug("{}: no graph for the profile's step without communication: {}", name_, e.what());
    }
  }
  comm.barrier();
  const double t_with = time_steps(kProfileSteps, [&] {
    if (with) launch_graph(*with, k);
    else enqueue_step(n, k, &comm);
  });
  const double t_without = time_steps(kProfileSteps, [&] {
    if (without.exec) launch_graph(without, k);
    else enqueue_step(n, k, nullptr);
  });
  without = StepGraph{};

  if (profile_buffer_.size() == 0) profile_buffer_.allocate(kParamCount);
  CUDA_CHECK(cudaMemsetAsync(profile_buffer_.get(), 0, profile_buffer_.bytes(), s()));
  cudaStream_t cs = static_cast<cudaStream_t>(comm.stream());
  CUDA_CHECK(cudaEventRecord(bucket_ready_[0].get(), s()));
  CUDA_CHECK(cudaStreamWaitEvent(cs, bucket_ready_[0].get(), 0));
  comm.barrier();
  CUDA_CHECK(cudaEventRecord(time_begin_.get(), cs));
  for (int i = 0; i < kProfileSteps; ++i) comm.all_reduce_sum(profile_buffer_.get(), kParamCount);
  CUDA_CHECK(cudaEventRecord(time_end_.get(), cs));
  CUDA_CHECK(cudaStreamWaitEvent(s(), time_end_.get(), 0));
  wait_device();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, time_begin_.get(), time_end_.get()));

  CommProfile& p = profile_;
  p.replicas = comm.size();
  p.bytes = static_cast<int64_t>(kParamCount * sizeof(float));
  p.buckets = kBuckets;
  p.allreduce_s = ms / 1000.0 / kProfileSteps;
  p.algbw_gbs = p.allreduce_s > 0 ? double(p.bytes) / p.allreduce_s / 1e9 : 0;
  p.busbw_gbs = p.algbw_gbs * 2.0 * (p.replicas - 1) / p.replicas;
  p.step_s = t_with / kProfileSteps;
  p.step_no_comm_s = t_without / kProfileSteps;
  p.exposed_s = std::max(0.0, p.step_s - p.step_no_comm_s);
  spdlog::debug("{}: all-reduce of {} bytes {:.1f} us (algbw {:.1f} GB/s, busbw {:.1f} GB/s); step {:.1f} us, "
                "{:.1f} us without communication: {:.1f} us exposed",
                name_, p.bytes, p.allreduce_s * 1e6, p.algbw_gbs, p.busbw_gbs, p.step_s * 1e6, p.step_no_comm_s * 1e6,
                p.exposed_s * 1e6);
}

void CudaEngine::warm_up(std::span<const StepShape> shapes, Communicator& comm) {
  CUDA_CHECK(cudaSetDevice(device_));
  Communicator* reduce = reducer(comm);
  comm_ = &comm;
  drop_graphs();
  profile_ = CommProfile{};
  // Every rank takes part in every collective below, with or without data.
  const bool have_data = train_.count > 0;

  // Parameters and moments are restored at the end: the warm-up's steps are not training.
  if (backup_.size() == 0) backup_.allocate(3 * kParamCount);
  const DeviceBuffer<float>* state[3] = {&params_, &m_, &v_};
  for (int i = 0; i < 3; ++i)
    CUDA_CHECK(cudaMemcpyAsync(backup_.get() + i * kParamCount, state[i]->get(), params_.bytes(),
                               cudaMemcpyDeviceToDevice, s()));
  // Any valid samples do (the bound data may have changed since the last warm-up).
  std::vector<int32_t> idx(static_cast<std::size_t>(max_batch_));
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = have_data ? int32_t(int64_t(i) % train_.count) : 0;
  if (warm_idx_.size() == 0) warm_idx_.allocate(idx.size());
  CUDA_CHECK(cudaMemcpyAsync(warm_idx_.get(), idx.data(), idx.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s()));
  // Every plan the run will use first, so that the workspace has its final size before any
  // capture (evaluation's chunks are max_batch; a smaller last chunk is built when needed).
  for (const auto& shape : shapes) {
    MB_CHECK(shape.share >= 0 && shape.share <= max_batch_, Error, "{}: warm-up share {} (max batch {})", name_,
             shape.share, max_batch_);
    if (shape.share > 0) plan_for(static_cast<int>(shape.share));
  }
  plan_for(max_batch_);

  auto args_of = [&](const StepShape& shape) {
    return step_args(static_cast<int>(shape.share), warm_idx_.get(), 1.0f / float(std::max<int64_t>(1, shape.global_batch)),
                     0.0f, AdamConfig{}, warm_stats_.get());
  };
  GraphWarmUpSteps steps;
  steps.eager_step = [&](const StepShape& shape) {
    enqueue_step(have_data ? static_cast<int>(shape.share) : 0, args_of(shape), reduce);
    wait_device();
  };
  steps.capture = [&](const StepShape& shape) {
    try {
      graphs_[shape.global_batch] = capture_step(static_cast<int>(shape.share), args_of(shape), reduce);
      return true;
    } catch (const DeviceError& e) {
      spdlog::warn("{}: capturing the step of global batch {} failed, every replica runs it eagerly: {}", name_,
                   shape.global_batch, e.what());
      graphs_.erase(shape.global_batch);
      return false;
    }
  };
  steps.discard = [&](const StepShape& shape) { graphs_.erase(shape.global_batch); };
  steps.replay = [&](const StepShape& shape) {
    launch_graph(graphs_.at(shape.global_batch), args_of(shape));
    wait_device();
  };
  const bool wanted = use_graphs_ && have_data && (reduce == nullptr || reduce->graph_capturable());
  const std::set<int64_t> agreed = agree_on_step_graphs(shapes, comm, wanted, steps);
  graph_comm_ = &comm;
  spdlog::debug("{}: {} of {} step shape(s) run as CUDA graphs", name_, agreed.size(), shapes.size());

  if (reduce && !shapes.empty()) profile_communication(shapes.front(), *reduce);

  for (int i = 0; i < 3; ++i)
    CUDA_CHECK(cudaMemcpyAsync(state[i]->get(), backup_.get() + i * kParamCount, params_.bytes(),
                               cudaMemcpyDeviceToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(train_stats_.get(), 0, train_stats_.bytes(), s()));
  pending_samples_ = 0;
  wait_device();
}

// --- one-off calls (tests, tools, validation) ------------------------------------------

// Any number of samples, like the CPU engines: beyond max_batch in chunks whose gradients are
// summed (the trainer never asks for that; tests and tools may).
// Host timing of queued device work would measure nothing: `times` is left alone.
BatchStats CudaEngine::forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes*) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(indices, train_);
  const std::size_t total = indices.size(), chunk = std::size_t(max_batch_);
  CUDA_CHECK(cudaMemsetAsync(call_stats_.get(), 0, call_stats_.bytes(), s()));
  if (total == 0) {
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    return read_stats(call_stats_, 0, false);
  }
  if (total > chunk && grad_sum_.size() == 0) grad_sum_.allocate(kParamCount);
  for (std::size_t off = 0; off < total; off += chunk) {
    const int n = static_cast<int>(std::min(chunk, total - off));
    const ConvPlan& plan = plan_for(n);
    const int32_t* idx = stage_indices(indices.subspan(off, std::size_t(n)), train_);
    const StepKernelArgs k = step_args(n, idx, grad_scale, 0.0f, AdamConfig{}, call_stats_.get());
    forward(n, plan, k.gather);
    launch_softmax_xent(k.softmax, s());
    backward(n, plan, [](int) {});
    if (total > chunk) {
      if (off == 0) {
        CUDA_CHECK(cudaMemcpyAsync(grad_sum_.get(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
      } else {
        CUBLAS_CHECK(cublasSaxpy(cublas_.get(), static_cast<int>(kParamCount), &kOne, grads_.get(), 1, grad_sum_.get(), 1));
      }
    }
  }
  if (total > chunk)
    CUDA_CHECK(cudaMemcpyAsync(grads_.get(), grad_sum_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
  return read_stats(call_stats_, static_cast<int64_t>(total), false);
}

void CudaEngine::apply_adam(const AdamConfig& cfg, int64_t step) {
  const float lr_t = adam_step_size(cfg, step);
  CUDA_CHECK(cudaSetDevice(device_));
  launch_adam(step_args(0, nullptr, 1.0f, lr_t, cfg, nullptr).adam, s());
  wait_device();
}

BatchStats CudaEngine::evaluate_on(const DeviceData& data, std::span<const int32_t> indices) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(indices, data);
  const std::size_t total = indices.size();
  if (total == 0) return {};
  if (eval_idx_.size() < total) {
    wait_device();   // queued evaluations may still read the old buffer
    eval_idx_.allocate(total);
  }
  CUDA_CHECK(cudaMemcpyAsync(eval_idx_.get(), indices.data(), total * sizeof(int32_t), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(call_stats_.get(), 0, call_stats_.bytes(), s()));
  for (std::size_t off = 0; off < total; off += std::size_t(max_batch_)) {
    const int n = static_cast<int>(std::min<std::size_t>(std::size_t(max_batch_), total - off));
    const ConvPlan& plan = plan_for(n);
    const GatherArgs gather{data.pixels.get(), data.labels.get(), eval_idx_.get() + off, n, x_.get(), labels_.get()};
    forward(n, plan, gather);
    const SoftmaxArgs softmax{logits_.get(), param(kFc2B), labels_.get(), n, kClasses, 0.0f, nullptr,
                              softmax_partials_.get(), counters_.get(), call_stats_.get()};
    launch_softmax_xent(softmax, s());
  }
  return read_stats(call_stats_, static_cast<int64_t>(total), false);
}

}  // namespace

std::unique_ptr<ReplicaEngine> make_cuda_engine(int device, int max_batch, Precision precision) {
  return std::make_unique<CudaEngine>(device, max_batch, precision);
}

}  // namespace mb::cuda

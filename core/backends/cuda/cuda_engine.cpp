// The CUDA replica engine: the whole model on one GPU. Parameters, gradients and Adam moments
// are each ONE flat device buffer in cnn_spec's layout, so the all-reduce and the optimizer
// see a single range. Both data sets live on the device as uint8, and so does each epoch's
// training order (begin_epoch): a step reads its indices from there. The forward and backward
// work of a step is a StepPath (step_path.h: cuDNN/cuBLAS, or the own fused kernels,
// --cuda-path); the engine adds the all-reduce buckets, Adam, graphs and waits.
//
// The GPU runs ahead of the host. A training step only enqueues work: no copy, no wait. The
// step's statistics accumulate on the device and are read at the trainer's reporting tick
// (steps_per_report) or the end of the epoch; the per-step values (where the indices start,
// 1/global batch, Adam's step size) are kernel arguments, which a replayed graph gets through
// the nodes its capture named (step_capture.h). Waits poll with a deadline (device_wait.h), so
// a failing or stuck peer, or a stuck device, ends them.
//
// The gradient all-reduce runs in two buckets on the communicator's stream, overlapped with
// backward: everything but conv1 as soon as conv2's weight gradient exists, conv1's 320
// floats at the end. A device communicator of ONE rank (NCCL on one GPU) is used like any
// other, so a single GPU runs the same enqueue, capture and abort code; but NCCL makes a
// one-rank in-place all-reduce a no-op, so no data moves and the measured exposed cost is
// NCCL's launch overhead at most (two ranks on one GPU are refused: NCCL's collectives need
// two GPUs to be exercised).
//
// warm_up (untimed, collective) prepares every step shape of the run: plans, the convolution
// algorithms by measurement (agreed by every rank), kernels, NCCL's connections, and the CUDA
// graphs the ranks agree on (step_graphs.h: the same choice on every rank, keyed on the global
// batch); then it measures the all-reduce's exposed cost and bandwidth (CommProfile) and
// restores parameters, moments and statistics. What it chose is engine_report(), which also
// counts the run's training steps that replayed a graph and those that ran eagerly.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/common/cuda_options.h"
#include "backends/common/device_wait.h"
#include "backends/common/step_graphs.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/device_select.h"
#include "backends/cuda/cudnn_plan.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/step_capture.h"
#include "backends/cuda/step_path.h"
#include "model/cnn_spec.h"
#include "util/bandwidth.h"
#include "util/deadline.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

// The dense width of a reference-family model, the only models the CUDA paths are written for
// (the registry refuses the others before an engine is made; this is the engine's own guard).
int cuda_family_width(const ModelSpec& model) {
  const std::optional<int> width = reference_family_width(model);
  MB_CHECK(width.has_value(), ConfigError, "the CUDA backend trains the reference family only, not {}", model.name());
  return *width;
}

using namespace cnn;

constexpr std::size_t kCublasWorkspace = std::size_t(32) << 20;  // NVIDIA's recommendation for Hopper
constexpr std::size_t kMinWorkspace = std::size_t(64) << 20;
// Statistics are read every this many steps (and at the end of each epoch): 469 steps of an
// epoch at batch 128 make 8 reports, each a short stall while the host reads 16 bytes.
constexpr int kStepsPerReport = 64;
// Steps per variant in the warm-up's communication profile.
constexpr int kProfileSteps = 20;
// How long the destructor lets queued work drain after a failure (at most --timeout).
constexpr double kDrainS = 10;

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

class CudaEngine final : public ReplicaEngine {
 public:
  CudaEngine(int device, int max_batch, Precision precision, const ModelSpec& model, const CudaOptions& options);
  ~CudaEngine() override;
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  std::string device_name() const override { return name_; }
  const ModelSpec& model() const override { return model_; }
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
  EngineReport engine_report() const override { return report_; }
  int steps_per_report() const override { return kStepsPerReport; }
  BatchStats evaluate(std::span<const int32_t> indices) override { return evaluate_on(val_, indices); }
  BatchStats evaluate_train(std::span<const int32_t> indices) override { return evaluate_on(train_, indices); }
  void synchronize() override;

 private:
  cudaStream_t s() const { return stream_.get(); }

  void check_indices(std::span<const int32_t> indices, const DeviceData& data) const;
  const int32_t* stage_indices(std::span<const int32_t> indices, const DeviceData& data);
  const int32_t* step_indices(const TrainStep& st);
  void prepare(int n);  // the path's plans for batch n, and a workspace they fit in
  void upload(const Dataset& d, DeviceData& out, const char* role);
  Communicator* reducer(Communicator& comm) const;

  // Waits (polling, with --timeout) until everything queued on the stream has run. Const:
  // the waits of the const getters; the failure path changes only what failure changes.
  void wait_device() const;
  void release_after_failure() const;

  StepInputs inputs(int n, const DeviceData& data, const int32_t* idx, float grad_scale, double* stats) const {
    return StepInputs{n, data.pixels.get(), data.labels.get(), idx, grad_scale, stats};
  }
  AdamArgs adam_args(float lr_t, const AdamConfig& cfg) const {
    return AdamArgs{params_.get(), grads_.get(), m_.get(),  v_.get(),   static_cast<int>(count_),
                    lr_t,          cfg.beta1,    cfg.beta2, cfg.epsilon};
  }
  // Enqueue only (no host waits): usable eagerly and under stream capture.
  void enqueue_step(const StepInputs& in, const AdamArgs& adam, Communicator* comm, StepCapture* capture,
                    const std::function<void()>& mid_step = {});
  void enqueue_allreduce(int bucket, Communicator& comm);
  void inject_fault(int64_t step, double timeout_s);

  CapturedStep capture_step(const StepInputs& in, const AdamArgs& adam, Communicator* comm);
  void launch_graph(CapturedStep& g, const StepInputs& in, const AdamArgs& adam);
  void drop_graphs() const;
  void tune_algorithms(std::span<const StepShape> shapes, Communicator& comm, bool have_data);
  void fill_report(std::span<const StepShape> shapes, const std::set<int64_t>& agreed);
  void profile_communication(const StepShape& shape, Communicator& comm);
  double time_steps(int steps, const std::function<void()>& step);
  BatchStats read_stats(DeviceBuffer<double>& stats, int64_t samples, bool reset);
  BatchStats evaluate_on(const DeviceData& data, std::span<const int32_t> indices);

  const int device_;
  const int max_batch_;
  const Precision precision_;
  const ModelSpec model_;
  const std::size_t count_;   // the flat buffers' floats: model_.param_count()
  const CudaOptions options_;
  std::string name_;

  // Declaration order = reverse destruction order: streams outlive handles, handles outlive
  // buffers, paths and graphs.
  Stream stream_;
  CublasHandle cublas_;
  CudnnHandle cudnn_;
  std::vector<Event> bucket_ready_;
  Event comm_done_, sync_, time_begin_, time_end_;

  DeviceBuffer<float> cublas_workspace_, workspace_;
  std::vector<DeviceBuffer<float>> retired_workspaces_;  // still referenced by captured graphs
  DeviceBuffer<float> params_, grads_, m_, v_;
  DeviceBuffer<float> backup_;                                  // params, m, v across warm_up
  DeviceBuffer<float> grad_sum_;                                // forward_backward beyond max_batch only
  DeviceBuffer<float> profile_buffer_;                          // the bare all-reduce of the profile
  mutable PinnedBuffer<float> params_host_;                     // get_params/get_grads staging
  DeviceBuffer<double> train_stats_, call_stats_, warm_stats_;  // loss sum, correct count
  PinnedBuffer<double> stats_host_;
  DeviceBuffer<int32_t> order_dev_, stage_idx_, warm_idx_, eval_idx_;
  DeviceData train_, val_;
  std::vector<int32_t> order_host_;            // this epoch's order, as uploaded
  std::unique_ptr<MappedFlag> stall_release_;  // fault injection only

  std::unique_ptr<StepPath> path_;
  std::set<int> prepared_;                            // batches the path has plans for
  mutable std::map<int64_t, CapturedStep> graphs_;    // by global batch, agreed in warm_up
  mutable const Communicator* graph_comm_ = nullptr;  // the communicator they captured
  mutable Communicator* comm_ = nullptr;              // of the last step or warm-up (outlives us)
  mutable bool failed_ = false;                       // device work was cancelled
  int64_t pending_samples_ = 0;                       // in train_stats_
  CommProfile profile_;
  EngineReport report_;
};

CudaEngine::CudaEngine(int device, int max_batch, Precision precision, const ModelSpec& model,
                       const CudaOptions& options)
    : device_(device),
      max_batch_(max_batch),
      precision_(precision),
      model_(model),
      count_(model.param_count()),
      options_(options) {
  MB_CHECK(max_batch >= 1, ConfigError, "cuda:{}: the batch per replica must be at least 1, got {}", device, max_batch);
  select_device(device);
  try {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    name_ = fmt::format("cuda:{} {}", device, prop.name);

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

    for (int b = 0; b < kBuckets; ++b) bucket_ready_.push_back(make_event(false));
    comm_done_ = make_event(false);
    sync_ = make_event(false);
    time_begin_ = make_event(true);
    time_end_ = make_event(true);

    params_.allocate(count_);
    grads_.allocate(count_);
    m_.allocate(count_);
    v_.allocate(count_);
    params_host_ = PinnedBuffer<float>(count_);
    for (auto* st : {&train_stats_, &call_stats_, &warm_stats_}) st->allocate(2);
    stats_host_ = PinnedBuffer<double>(2);
    stage_idx_.allocate(std::size_t(max_batch));
    if (options_.fault.active()) stall_release_ = std::make_unique<MappedFlag>();

    for (auto* buf : {&params_, &grads_, &m_, &v_}) CUDA_CHECK(cudaMemsetAsync(buf->get(), 0, buf->bytes(), s()));
    for (auto* st : {&train_stats_, &call_stats_, &warm_stats_})
      CUDA_CHECK(cudaMemsetAsync(st->get(), 0, st->bytes(), s()));

    const PathContext ctx{s(), max_batch, cuda_family_width(model_), precision, params_.get(), grads_.get()};
    path_ = options_.path == CudaPath::Fused ? make_fused_path(ctx) : make_cudnn_path(ctx, cudnn_.get(), cublas_.get());
    CUDA_CHECK(cudaStreamSynchronize(s()));  // nothing else exists yet that could fail
  } catch (const DeviceError& e) {
    throw DeviceError(fmt::format("cuda:{}: {}", device, e.what()));
  }
  report_.path = to_string(options_.path);
  report_.graph_steps = report_.eager_steps = 0;
  spdlog::debug("{}: engine ready (max batch {}, {}, path {}, CUDA graphs {}{})", name_, max_batch_,
                to_string(precision_), report_.path, options_.graphs ? "on" : "off",
                options_.fault.active() ? ", injected fault " + to_string(options_.fault) : std::string());
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
    // hold the process here (cudaFree below still can: the trainer reports such a thread).
    const Deadline deadline = Deadline::after(std::min(kDrainS, comm_ ? comm_->timeout_s() : kDrainS));
    bool drained = cudaEventRecord(sync_.get(), s()) != cudaSuccess;
    while (!drained && !deadline.passed()) {
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
  // An injected stall is released first, so that nothing below can wait behind it (a hang is
  // not: that is its point). Then graphs: NCCL's abort waits for the graphs that captured its
  // collectives.
  if (stall_release_ && options_.fault.kind == FaultKind::Stall) stall_release_->set();
  drop_graphs();
  failed_ = true;
  if (comm_) comm_->cancel_device_work();
}

void CudaEngine::wait_device() const {
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaEventRecord(sync_.get(), s()));
  wait_polling([this] { return event_done(sync_.get()); }, comm_, [this] { release_after_failure(); }, name_);
}

void CudaEngine::synchronize() { wait_device(); }

Communicator* CudaEngine::reducer(Communicator& comm) const {
  const bool device = comm.memory_space() == MemorySpace::CudaDevice && comm.stream() != nullptr;
  if (comm.size() == 1 && !device) return nullptr;  // a host communicator of one: nothing to sum
  MB_CHECK(device, ConfigError, "{}: the '{}' communicator reduces host memory; CUDA replicas need 'nccl' or 'in-gpu'",
           name_, comm.name());
  return &comm;
}

void CudaEngine::upload(const Dataset& d, DeviceData& out, const char* role) {
  out = DeviceData{};
  out.name = d.name;
  if (d.count == 0) return;
  MB_CHECK(d.rows == kImageSide && d.cols == kImageSide, DataError,
           "{} ({} set) has {}x{} images, the model takes {}x{}", d.name, role, d.rows, d.cols, kImageSide, kImageSide);
  MB_CHECK(d.pixels.size() == std::size_t(d.count) * kImagePixels && d.labels.size() == std::size_t(d.count), DataError,
           "{} ({} set): {} images but {} pixel bytes and {} labels", d.name, role, d.count, d.pixels.size(),
           d.labels.size());
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
  MB_CHECK(params.size() == count_, Error, "{}: set_params got {} floats, the model has {}", name_, params.size(),
           count_);
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaMemcpyAsync(params_.get(), params.data(), params_.bytes(), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(m_.get(), 0, m_.bytes(), s()));
  CUDA_CHECK(cudaMemsetAsync(v_.get(), 0, v_.bytes(), s()));
  wait_device();
}

void CudaEngine::get_params(std::span<float> params) const {
  MB_CHECK(params.size() == count_, Error, "{}: get_params got room for {} floats, the model has {}", name_,
           params.size(), count_);
  CUDA_CHECK(cudaSetDevice(device_));
  // Through pinned memory: a copy into pageable memory would block in the driver until the
  // whole queue ran, where a failed peer could hold it forever.
  CUDA_CHECK(cudaMemcpyAsync(params_host_.get(), params_.get(), params_.bytes(), cudaMemcpyDeviceToHost, s()));
  wait_device();
  std::memcpy(params.data(), params_host_.get(), params_.bytes());
}

void CudaEngine::get_grads(std::span<float> grads) const {
  MB_CHECK(grads.size() == count_, Error, "{}: get_grads got room for {} floats, the model has {}", name_,
           grads.size(), count_);
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
  check_indices(order, train_);  // once per epoch instead of every step
  if (order_dev_.size() < order.size()) {
    wait_device();  // the old buffer may still be read by queued steps
    order_dev_.allocate(order.size());
  }
  order_host_.assign(order.begin(), order.end());
  if (!order.empty())
    CUDA_CHECK(cudaMemcpyAsync(order_dev_.get(), order.data(), order.size_bytes(), cudaMemcpyHostToDevice, s()));
}

void CudaEngine::prepare(int n) {
  if (n <= 0 || prepared_.count(n)) return;
  path_->prepare(n);
  prepared_.insert(n);
  const std::size_t need = path_->workspace_bytes();
  if (need > workspace_.bytes()) {
    // Captured graphs and queued steps hold the old workspace's address: it is retired, not
    // freed, so no rank ever has to drop its graphs (or wait) because a plan grew.
    if (workspace_.size() > 0) retired_workspaces_.push_back(std::move(workspace_));
    const std::size_t bytes = std::max(need, kMinWorkspace);
    workspace_.allocate((bytes + sizeof(float) - 1) / sizeof(float));
    path_->set_workspace(workspace_.get(), workspace_.bytes());
  }
}

// --- the step --------------------------------------------------------------------------

void CudaEngine::enqueue_allreduce(int bucket, Communicator& comm) {
  cudaStream_t cs = static_cast<cudaStream_t>(comm.stream());
  CUDA_CHECK(cudaEventRecord(bucket_ready_[bucket].get(), s()));
  CUDA_CHECK(cudaStreamWaitEvent(cs, bucket_ready_[bucket].get(), 0));
  const BucketRange r = bucket_range(bucket, count_);
  comm.all_reduce_sum(grads_.get() + r.offset, r.count);
}

void CudaEngine::enqueue_step(const StepInputs& in, const AdamArgs& adam, Communicator* comm, StepCapture* capture,
                              const std::function<void()>& mid_step) {
  auto ready = [&](int bucket) {
    if (comm) enqueue_allreduce(bucket, *comm);
  };
  if (in.n == 0) {
    // No samples, but the collective still needs this rank: contribute zeros.
    CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), s()));
    for (int b = 0; b < kBuckets; ++b) ready(b);
  } else {
    path_->train(in, capture, ready, mid_step);
  }
  if (comm) {
    CUDA_CHECK(cudaEventRecord(comm_done_.get(), static_cast<cudaStream_t>(comm->stream())));
    CUDA_CHECK(cudaStreamWaitEvent(s(), comm_done_.get(), 0));
  }
  launch_adam(adam, s());
  if (capture) capture->mark(StepNode::Adam);
}

// --inject-fault, on its replica, between forward and backward (cuda_options.h).
void CudaEngine::inject_fault(int64_t step, double timeout_s) {
  const std::string what = fmt::format("--inject-fault {} at training step {}", to_string(options_.fault), step);
  if (options_.fault.kind == FaultKind::Abort) throw DeviceError(fmt::format("{}: injected abort ({})", name_, what));
  const double cap_s = fault_spin_cap_s(timeout_s);
  spdlog::warn("{}: injected device {} ({}; the device spins for at most {:g} s)", name_,
               options_.fault.kind == FaultKind::Hang ? "hang" : "stall", what, cap_s);
  launch_stall(stall_release_->device(), cap_s, s());
}

CapturedStep CudaEngine::capture_step(const StepInputs& in, const AdamArgs& adam, Communicator* comm) {
  StepCapture capture(s());
  enqueue_step(in, adam, comm, &capture);
  return capture.finish(in.n);
}

void CudaEngine::launch_graph(CapturedStep& g, const StepInputs& in, const AdamArgs& adam) {
  path_->update(g, in);
  set_node_args(g.exec.get(), g.nodes[std::size_t(StepNode::Adam)], adam);
  CUDA_CHECK(cudaGraphLaunch(g.exec.get(), s()));
}

void CudaEngine::train_step(const TrainStep& st, Communicator& comm, const AdamConfig& cfg, PhaseTimes& times) {
  CUDA_CHECK(cudaSetDevice(device_));
  const int n = static_cast<int>(st.indices.size());
  MB_CHECK(st.indices.size() <= std::size_t(max_batch_), ConfigError,
           "{}: {} samples in one step, the engine was built for at most {}", name_, st.indices.size(), max_batch_);
  Communicator* reduce = reducer(comm);
  comm_ = &comm;
  comm.note_progress(st.adam_step);
  try {
    comm.check();  // a failed peer: do not queue more work behind its collective
  } catch (...) {
    release_after_failure();
    throw;
  }
  const StepInputs in = inputs(n, train_, step_indices(st), st.grad_scale, train_stats_.get());
  const AdamArgs adam = adam_args(adam_step_size(cfg, st.adam_step), cfg);
  // The fault's step runs eagerly on every rank (the same captured-or-eager choice for its
  // collectives everywhere); only the fault's replica injects it.
  const bool fault_step = options_.fault.active() && st.adam_step == options_.fault.step;
  std::function<void()> mid;
  if (options_.fault.hits(st.adam_step, comm.rank()))
    mid = [this, &st, &comm] { inject_fault(st.adam_step, comm.timeout_s()); };

  // A graph exactly where every rank has one for this global batch (agreed in warm_up), so
  // all ranks make the same captured-or-eager choice for the step's collectives.
  auto it = graph_comm_ == &comm && !fault_step ? graphs_.find(st.global_batch) : graphs_.end();
  if (it != graphs_.end()) {
    MB_CHECK(it->second.n == n, Error, "{}: a step of global batch {} with {} samples here, warm_up prepared {}", name_,
             st.global_batch, n, it->second.n);
    launch_graph(it->second, in, adam);
    ++report_.graph_steps;
  } else {
    prepare(n);
    enqueue_step(in, adam, reduce, nullptr, mid);
    ++report_.eager_steps;
  }
  pending_samples_ += n;
  if (reduce) times[phase::AllReduce] += profile_.exposed_s;
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
  const int n = train_.count > 0 ? static_cast<int>(shape.share) : 0;  // collective even without data
  const StepInputs in = inputs(n, train_, warm_idx_.get(), 1.0f / float(shape.global_batch), warm_stats_.get());
  const AdamArgs adam = adam_args(0.0f, AdamConfig{});
  auto it = graph_comm_ == &comm ? graphs_.find(shape.global_batch) : graphs_.end();
  CapturedStep* with = it != graphs_.end() ? &it->second : nullptr;
  // The variant without communication as a graph too, when the step runs as one: otherwise
  // the difference would be launch overhead, not communication. Local: no collective inside.
  CapturedStep without;
  if (with) {
    try {
      without = capture_step(in, adam, nullptr);
    } catch (const DeviceError& e) {
      spdlog::debug("{}: no graph for the profile's step without communication: {}", name_, e.what());
    }
  }
  comm.barrier();
  const double t_with = time_steps(kProfileSteps, [&] {
    if (with)
      launch_graph(*with, in, adam);
    else
      enqueue_step(in, adam, &comm, nullptr);
  });
  const double t_without = time_steps(kProfileSteps, [&] {
    if (without.exec)
      launch_graph(without, in, adam);
    else
      enqueue_step(in, adam, nullptr, nullptr);
  });
  without = CapturedStep{};

  if (profile_buffer_.size() == 0) profile_buffer_.allocate(count_);
  CUDA_CHECK(cudaMemsetAsync(profile_buffer_.get(), 0, profile_buffer_.bytes(), s()));
  cudaStream_t cs = static_cast<cudaStream_t>(comm.stream());
  CUDA_CHECK(cudaEventRecord(bucket_ready_[0].get(), s()));
  CUDA_CHECK(cudaStreamWaitEvent(cs, bucket_ready_[0].get(), 0));
  comm.barrier();
  CUDA_CHECK(cudaEventRecord(time_begin_.get(), cs));
  for (int i = 0; i < kProfileSteps; ++i) comm.all_reduce_sum(profile_buffer_.get(), count_);
  CUDA_CHECK(cudaEventRecord(time_end_.get(), cs));
  CUDA_CHECK(cudaStreamWaitEvent(s(), time_end_.get(), 0));
  wait_device();
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, time_begin_.get(), time_end_.get()));

  CommProfile& p = profile_;
  p.replicas = comm.size();
  p.bytes = static_cast<int64_t>(count_ * sizeof(float));
  p.buckets = kBuckets;
  p.allreduce_s = ms / 1000.0 / kProfileSteps;
  const AllReduceBandwidth bw = all_reduce_bandwidth(double(p.bytes), p.allreduce_s, p.replicas);
  p.algbw_gbs = bw.algbw_gbs;
  p.busbw_gbs = bw.busbw_gbs;
  p.step_s = t_with / kProfileSteps;
  p.step_no_comm_s = t_without / kProfileSteps;
  p.exposed_s = std::max(0.0, p.step_s - p.step_no_comm_s);
  spdlog::debug(
      "{}: all-reduce of {} bytes {:.1f} us (algbw {:.1f} GB/s, busbw {:.1f} GB/s); step {:.1f} us, "
      "{:.1f} us without communication: {:.1f} us exposed",
      name_, p.bytes, p.allreduce_s * 1e6, p.algbw_gbs, p.busbw_gbs, p.step_s * 1e6, p.step_no_comm_s * 1e6,
      p.exposed_s * 1e6);
}

// Collective: every rank measures the candidates of its training plans (within the tuning
// budget), the timings are all-gathered and one rule picks the same algorithm per pass on
// every rank. Ranks without samples for a shape take part without an opinion.
void CudaEngine::tune_algorithms(std::span<const StepShape> shapes, Communicator& comm, bool have_data) {
  // Every rank runs the same path and tuning budget (the same environment), so every rank
  // skips this or takes part alike. The fused path has no library convolutions to choose.
  if (options_.tune_s <= 0 || path_->kind() != CudaPath::Cudnn) return;
  for (const auto& shape : shapes) {
    const int n = have_data ? static_cast<int>(shape.share) : 0;
    const Deadline deadline = Deadline::after(options_.tune_s);
    ConvTuning mine = n > 0 ? path_->measure(n, deadline, [this] { wait_device(); }) : ConvTuning{};
    mine.passes.resize(kConvPasses);
    const std::vector<AgreedAlgo> agreed = agree_on_algorithms(mine.passes, comm);
    if (n > 0) path_->choose(n, agreed);
  }
  // A plan may need more workspace now: grow it before anything is captured.
  const std::size_t need = path_->workspace_bytes();
  if (need > workspace_.bytes()) {
    if (workspace_.size() > 0) retired_workspaces_.push_back(std::move(workspace_));
    workspace_.allocate((std::max(need, kMinWorkspace) + sizeof(float) - 1) / sizeof(float));
    path_->set_workspace(workspace_.get(), workspace_.bytes());
  }
}

void CudaEngine::fill_report(std::span<const StepShape> shapes, const std::set<int64_t>& agreed) {
  report_.graph_batches.clear();
  report_.eager_batches.clear();
  report_.graph_steps = report_.eager_steps = 0;  // a new run's steps (the warm-up's are not counted)
  std::vector<int> batches;
  for (const auto& shape : shapes) {
    auto& list = agreed.count(shape.global_batch) ? report_.graph_batches : report_.eager_batches;
    if (std::find(list.begin(), list.end(), shape.global_batch) == list.end()) list.push_back(shape.global_batch);
    if (shape.share > 0) batches.push_back(static_cast<int>(shape.share));
  }
  report_.nodes = {};
  if (!shapes.empty()) {
    const auto it = graphs_.find(shapes.front().global_batch);
    if (it != graphs_.end()) report_.nodes = it->second.counts;
  }
  report_.conv = path_->choices(batches);
  spdlog::debug(
      "{}: path {}: {} step shape(s) as CUDA graphs, {} eager; the standard step's graph has {} nodes ({} "
      "kernels, {} memsets, {} copies, {} others)",
      name_, report_.path, report_.graph_batches.size(), report_.eager_batches.size(), report_.nodes.total(),
      report_.nodes.kernel, report_.nodes.memset, report_.nodes.memcpy, report_.nodes.other);
  for (const ConvChoice& c : report_.conv)
    spdlog::debug("{}: {} at batch {}: {} ({} math, {} B workspace), {}{}", name_, c.pass, c.batch, c.algo_name, c.math,
                  c.workspace_bytes, c.chosen_by, c.time_us >= 0 ? fmt::format(", {:.1f} us", c.time_us) : "");
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
  if (backup_.size() == 0) backup_.allocate(3 * count_);
  const DeviceBuffer<float>* state[3] = {&params_, &m_, &v_};
  for (int i = 0; i < 3; ++i)
    CUDA_CHECK(cudaMemcpyAsync(backup_.get() + i * count_, state[i]->get(), params_.bytes(),
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
    prepare(static_cast<int>(shape.share));
  }
  prepare(max_batch_);

  auto inputs_of = [&](const StepShape& shape) {
    return inputs(have_data ? static_cast<int>(shape.share) : 0, train_, warm_idx_.get(),
                  1.0f / float(std::max<int64_t>(1, shape.global_batch)), warm_stats_.get());
  };
  const AdamArgs adam = adam_args(0.0f, AdamConfig{});
  // One eager step per shape first: the measurement below then times real activations.
  for (const auto& shape : shapes) enqueue_step(inputs_of(shape), adam, reduce, nullptr);
  wait_device();
  tune_algorithms(shapes, comm, have_data);

  GraphWarmUpSteps steps;
  steps.eager_step = [&](const StepShape& shape) {
    enqueue_step(inputs_of(shape), adam, reduce, nullptr);
    wait_device();
  };
  steps.capture = [&](const StepShape& shape) {
    try {
      graphs_[shape.global_batch] = capture_step(inputs_of(shape), adam, reduce);
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
    launch_graph(graphs_.at(shape.global_batch), inputs_of(shape), adam);
    wait_device();
  };
  const bool wanted = options_.graphs && have_data && (reduce == nullptr || reduce->graph_capturable());
  const std::set<int64_t> agreed = agree_on_step_graphs(shapes, comm, wanted, steps);
  graph_comm_ = &comm;
  fill_report(shapes, agreed);

  if (reduce && !shapes.empty()) profile_communication(shapes.front(), *reduce);

  for (int i = 0; i < 3; ++i)
    CUDA_CHECK(cudaMemcpyAsync(state[i]->get(), backup_.get() + i * count_, params_.bytes(),
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
  if (total > chunk && grad_sum_.size() == 0) grad_sum_.allocate(count_);
  for (std::size_t off = 0; off < total; off += chunk) {
    const int n = static_cast<int>(std::min(chunk, total - off));
    prepare(n);
    const int32_t* idx = stage_indices(indices.subspan(off, std::size_t(n)), train_);
    path_->train(inputs(n, train_, idx, grad_scale, call_stats_.get()), nullptr, [](int) {}, {});
    if (total > chunk) {
      if (off == 0) {
        CUDA_CHECK(cudaMemcpyAsync(grad_sum_.get(), grads_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
      } else {
        constexpr float kOne = 1.0f;
        CUBLAS_CHECK(
            cublasSaxpy(cublas_.get(), static_cast<int>(count_), &kOne, grads_.get(), 1, grad_sum_.get(), 1));
      }
    }
  }
  if (total > chunk)
    CUDA_CHECK(cudaMemcpyAsync(grads_.get(), grad_sum_.get(), grads_.bytes(), cudaMemcpyDeviceToDevice, s()));
  return read_stats(call_stats_, static_cast<int64_t>(total), false);
}

void CudaEngine::apply_adam(const AdamConfig& cfg, int64_t step) {
  CUDA_CHECK(cudaSetDevice(device_));
  launch_adam(adam_args(adam_step_size(cfg, step), cfg), s());
  wait_device();
}

BatchStats CudaEngine::evaluate_on(const DeviceData& data, std::span<const int32_t> indices) {
  CUDA_CHECK(cudaSetDevice(device_));
  check_indices(indices, data);
  const std::size_t total = indices.size();
  if (total == 0) return {};
  if (eval_idx_.size() < total) {
    wait_device();  // queued evaluations may still read the old buffer
    eval_idx_.allocate(total);
  }
  CUDA_CHECK(cudaMemcpyAsync(eval_idx_.get(), indices.data(), total * sizeof(int32_t), cudaMemcpyHostToDevice, s()));
  CUDA_CHECK(cudaMemsetAsync(call_stats_.get(), 0, call_stats_.bytes(), s()));
  for (std::size_t off = 0; off < total; off += std::size_t(max_batch_)) {
    const int n = static_cast<int>(std::min<std::size_t>(std::size_t(max_batch_), total - off));
    prepare(n);
    path_->evaluate(inputs(n, data, eval_idx_.get() + off, 1.0f, call_stats_.get()));
  }
  return read_stats(call_stats_, static_cast<int64_t>(total), false);
}

}  // namespace

std::unique_ptr<ReplicaEngine> make_cuda_engine(int device, int max_batch, Precision precision,
                                               const ModelSpec& model, const EngineOptions& options) {
  return std::make_unique<CudaEngine>(device, max_batch, precision, model, cuda_options(options));
}

}  // namespace mb::cuda

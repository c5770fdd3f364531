// The cudnn step path (step_path.h): cuDNN for the convolutions, cuBLAS for the dense layers
// (row-major [out, in] weights seen by column-major cuBLAS as their transpose), own kernels
// for the rest (kernels.h): gather + normalise, bias + ReLU + pooling epilogues, softmax
// cross-entropy with on-device statistics. The convolutions' algorithms are measured in the
// warm-up (measure/choose) and recorded per pass.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/cuda/cudnn_plan.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/step_path.h"
#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

using namespace cnn;

constexpr float kOne = 1.0f, kZero = 0.0f;
constexpr int kTimedRuns = 3;  // per candidate, after one untimed run

class CudnnPath final : public StepPath {
 public:
  CudnnPath(const PathContext& ctx, cudnnHandle_t cudnn, cublasHandle_t cublas);

  CudaPath kind() const override { return CudaPath::Cudnn; }
  void prepare(int n) override { plan_for(n); }
  std::size_t workspace_bytes() const override;
  void set_workspace(void* w, std::size_t bytes) override { workspace_ = w, workspace_size_ = bytes; }
  void train(const StepInputs& in, StepCapture* capture, const std::function<void(int)>& bucket_ready,
             const std::function<void()>& mid_step) override;
  void evaluate(const StepInputs& in) override;
  void update(const CapturedStep& step, const StepInputs& in) override;
  ConvTuning measure(int n, const Deadline& deadline, const std::function<void()>& wait) override;
  void choose(int n, const std::vector<AgreedAlgo>& agreed) override;
  std::vector<ConvChoice> choices(const std::vector<int>& batches) const override;

 private:
  cudaStream_t s() const { return ctx_.stream; }
  float* param(ParamId id) const { return ctx_.params + layout_[id].offset; }
  float* grad(ParamId id) const { return ctx_.grads + layout_[id].offset; }
  ConvPlan& plan_for(int n);

  GatherArgs gather_args(const StepInputs& in) const {
    return GatherArgs{in.pixels, in.labels, in.idx, in.n, x_.get(), labels_.get()};
  }
  SoftmaxArgs softmax_args(const StepInputs& in, bool backward) const {
    return SoftmaxArgs{logits_.get(),
                       param(kFc2B),
                       labels_.get(),
                       in.n,
                       kClasses,
                       in.grad_scale,
                       backward ? dlogits_.get() : nullptr,
                       softmax_partials_.get(),
                       counters_.get(),
                       in.stats};
  }
  void forward(int n, const ConvPlan& plan);
  void backward(int n, const ConvPlan& plan, const std::function<void(int)>& ready);
  void run_pass(const ConvPlan& p, int pass, int algo, void* workspace, std::size_t bytes);

  void conv_forward(cudnnTensorDescriptor_t xd, const float* x, cudnnFilterDescriptor_t wd, const float* w,
                    cudnnConvolutionFwdAlgo_t algo, cudnnTensorDescriptor_t yd, float* y, void* ws, std::size_t bytes);
  void dense_forward(const float* x, const float* w, float* y, int n, int in, int out);
  void dense_backward_weight(const float* x, const float* dy, float* dw, int n, int in, int out);
  void dense_backward_input(const float* w, const float* dy, float* dx, int n, int in, int out);

  const PathContext ctx_;
  const ParamLayout layout_ = param_layout(ctx_.hidden);   // the model's dense width
  cudnnHandle_t cudnn_;
  cublasHandle_t cublas_;
  ConvShapes shapes_;
  std::map<int, ConvPlan> plans_;
  void* workspace_ = nullptr;
  std::size_t workspace_size_ = 0;
  Event t0_, t1_;
  DeviceBuffer<unsigned char> measure_workspace_;  // the measurement's, freed afterwards

  DeviceBuffer<double> softmax_partials_, bias1_partials_, bias2_partials_;
  DeviceBuffer<unsigned> counters_;  // softmax, bias1, bias2 (zero between launches)
  DeviceBuffer<int32_t> labels_;
  DeviceBuffer<float> x_, c1_, p1_, c2_, p2_, h_, logits_;  // forward (c*: conv output, then its gradient)
  DeviceBuffer<uint8_t> arg1_, arg2_;                       // pooling argmax
  DeviceBuffer<float> dlogits_, dh_, dp2_, dp1_;
};

CudnnPath::CudnnPath(const PathContext& ctx, cudnnHandle_t cudnn, cublasHandle_t cublas)
    : ctx_(ctx), cudnn_(cudnn), cublas_(cublas), shapes_(ConvShapes::make(ctx.precision)) {
  // The dense width is a run-time value: cuBLAS GEMMs and the bias kernels take it as an argument.
  MB_CHECK(ctx.hidden >= 1, ConfigError, "the cudnn path needs a dense width of at least 1, not {}", ctx.hidden);
  t0_ = make_event(true);
  t1_ = make_event(true);
  const std::size_t b = std::size_t(ctx.max_batch);
  const int mb = ctx.max_batch;
  softmax_partials_.allocate(std::size_t(softmax_partials(mb)));
  bias1_partials_.allocate(std::size_t(bias_grad_partials(mb, kConv1Out, kConv1Side, kConv1Side)));
  bias2_partials_.allocate(std::size_t(bias_grad_partials(mb, kConv2Out, kConv2Side, kConv2Side)));
  counters_.allocate(3);
  labels_.allocate(b);
  x_.allocate(b * kImagePixels);
  c1_.allocate(b * kConv1Out * kConv1Side * kConv1Side);
  p1_.allocate(b * kConv1Out * kPool1Side * kPool1Side);
  arg1_.allocate(p1_.size());
  c2_.allocate(b * kConv2Out * kConv2Side * kConv2Side);
  p2_.allocate(b * kFlat);
  arg2_.allocate(p2_.size());
  h_.allocate(b * std::size_t(ctx_.hidden));
  logits_.allocate(b * kClasses);
  dlogits_.allocate(b * kClasses);
  dh_.allocate(b * std::size_t(ctx_.hidden));
  dp2_.allocate(p2_.size());
  dp1_.allocate(p1_.size());
  CUDA_CHECK(cudaMemsetAsync(counters_.get(), 0, counters_.bytes(), s()));
}

ConvPlan& CudnnPath::plan_for(int n) {
  auto it = plans_.find(n);
  if (it == plans_.end()) it = plans_.emplace(n, make_conv_plan(cudnn_, shapes_, n)).first;
  return it->second;
}

std::size_t CudnnPath::workspace_bytes() const {
  std::size_t bytes = 0;
  for (const auto& [n, p] : plans_) bytes = std::max(bytes, p.workspace_bytes);
  return bytes;
}

// --- layer primitives ------------------------------------------------------------------

void CudnnPath::conv_forward(cudnnTensorDescriptor_t xd, const float* x, cudnnFilterDescriptor_t wd, const float* w,
                             cudnnConvolutionFwdAlgo_t algo, cudnnTensorDescriptor_t yd, float* y, void* ws,
                             std::size_t bytes) {
  CUDNN_CHECK(cudnnConvolutionForward(cudnn_, &kOne, xd, x, wd, w, shapes_.conv.get(), algo, ws, bytes, &kZero, yd, y));
}

// Row-major Y[n, out] = X[n, in] W[out, in]^T. cuBLAS is column-major: it sees X as the
// in x n matrix X^T and W as the in x out matrix W^T, so it computes Y^T = (W^T)^T X^T.
void CudnnPath::dense_forward(const float* x, const float* w, float* y, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &kOne, w, in, x, in, &kZero, y, out));
}

// dW[out, in] = dY^T X; column-major: dW^T (in x out) = X^T (in x n) * dY (n x out).
void CudnnPath::dense_backward_weight(const float* x, const float* dy, float* dw, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &kOne, x, in, dy, out, &kZero, dw, in));
}

// dX[n, in] = dY W; column-major: dX^T (in x n) = W^T (in x out) * dY^T (out x n).
void CudnnPath::dense_backward_input(const float* w, const float* dy, float* dx, int n, int in, int out) {
  CUBLAS_CHECK(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &kOne, w, in, dy, out, &kZero, dx, in));
}

// One of the five library passes with a given algorithm, on the step's buffers (the warm-up
// measures them; the step itself calls forward/backward).
void CudnnPath::run_pass(const ConvPlan& p, int pass, int algo, void* ws, std::size_t bytes) {
  switch (pass) {
    case kFwd1:
      return conv_forward(p.x.get(), x_.get(), shapes_.w1.get(), param(kConv1W),
                          static_cast<cudnnConvolutionFwdAlgo_t>(algo), p.a1.get(), c1_.get(), ws, bytes);
    case kFwd2:
      return conv_forward(p.p1.get(), p1_.get(), shapes_.w2.get(), param(kConv2W),
                          static_cast<cudnnConvolutionFwdAlgo_t>(algo), p.a2.get(), c2_.get(), ws, bytes);
    case kBwdFilter1:
      CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &kOne, p.x.get(), x_.get(), p.a1.get(), c1_.get(),
                                                 shapes_.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                                 ws, bytes, &kZero, shapes_.w1.get(), grad(kConv1W)));
      return;
    case kBwdFilter2:
      CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &kOne, p.p1.get(), p1_.get(), p.a2.get(), c2_.get(),
                                                 shapes_.conv.get(), static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo),
                                                 ws, bytes, &kZero, shapes_.w2.get(), grad(kConv2W)));
      return;
    case kBwdData2:
      CUDNN_CHECK(cudnnConvolutionBackwardData(cudnn_, &kOne, shapes_.w2.get(), param(kConv2W), p.a2.get(), c2_.get(),
                                               shapes_.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                               bytes, &kZero, p.p1.get(), dp1_.get()));
      return;
  }
}

// --- forward / backward ----------------------------------------------------------------

// Up to the fc2 logits without their bias (the softmax kernel adds it), after the gather.
void CudnnPath::forward(int n, const ConvPlan& p) {
  conv_forward(p.x.get(), x_.get(), shapes_.w1.get(), param(kConv1W), p.fwd(kFwd1), p.a1.get(), c1_.get(), workspace_,
               workspace_size_);
  launch_bias_relu_pool(c1_.get(), param(kConv1B), p1_.get(), arg1_.get(), n, kConv1Out, kConv1Side, kConv1Side, s());
  conv_forward(p.p1.get(), p1_.get(), shapes_.w2.get(), param(kConv2W), p.fwd(kFwd2), p.a2.get(), c2_.get(), workspace_,
               workspace_size_);
  launch_bias_relu_pool(c2_.get(), param(kConv2B), p2_.get(), arg2_.get(), n, kConv2Out, kConv2Side, kConv2Side, s());
  // NCHW pooled output is already flatten's C,H,W order.
  dense_forward(p2_.get(), param(kFc1W), h_.get(), n, kFlat, ctx_.hidden);
  launch_bias_relu(h_.get(), param(kFc1B), n, ctx_.hidden, s());
  dense_forward(h_.get(), param(kFc2W), logits_.get(), n, ctx_.hidden, kClasses);
}

// Expects dlogits_ (already scaled). Calls ready(b) as soon as bucket b's gradient range
// (bucket_range) is final, for the overlapped all-reduce. The convolution outputs' buffers
// receive their gradients (the outputs themselves are dead after the forward epilogues).
void CudnnPath::backward(int n, const ConvPlan& p, const std::function<void(int)>& ready) {
  unsigned* counter = counters_.get();
  launch_dense_bias_backward(dlogits_.get(), nullptr, n, kClasses, grad(kFc2B), s());
  dense_backward_weight(h_.get(), dlogits_.get(), grad(kFc2W), n, ctx_.hidden, kClasses);
  dense_backward_input(param(kFc2W), dlogits_.get(), dh_.get(), n, ctx_.hidden, kClasses);

  launch_dense_bias_backward(dh_.get(), h_.get(), n, ctx_.hidden, grad(kFc1B), s());
  dense_backward_weight(p2_.get(), dh_.get(), grad(kFc1W), n, kFlat, ctx_.hidden);
  dense_backward_input(param(kFc1W), dh_.get(), dp2_.get(), n, kFlat, ctx_.hidden);

  launch_pool_relu_bias_backward(dp2_.get(), p2_.get(), arg2_.get(), c2_.get(), grad(kConv2B), bias2_partials_.get(),
                                 counter + 2, n, kConv2Out, kConv2Side, kConv2Side, s());
  run_pass(p, kBwdFilter2, p.algo[kBwdFilter2], workspace_, workspace_size_);
  ready(0);
  run_pass(p, kBwdData2, p.algo[kBwdData2], workspace_, workspace_size_);
  launch_pool_relu_bias_backward(dp1_.get(), p1_.get(), arg1_.get(), c1_.get(), grad(kConv1B), bias1_partials_.get(),
                                 counter + 1, n, kConv1Out, kConv1Side, kConv1Side, s());
  run_pass(p, kBwdFilter1, p.algo[kBwdFilter1], workspace_, workspace_size_);
  ready(1);
}

void CudnnPath::train(const StepInputs& in, StepCapture* capture, const std::function<void(int)>& bucket_ready,
                      const std::function<void()>& mid_step) {
  const ConvPlan& plan = plans_.at(in.n);
  launch_gather_normalize(gather_args(in), s());
  if (capture) capture->mark(StepNode::Input);
  forward(in.n, plan);
  launch_softmax_xent(softmax_args(in, true), s());
  if (capture) capture->mark(StepNode::Loss);
  if (mid_step) mid_step();
  backward(in.n, plan, bucket_ready);
}

void CudnnPath::evaluate(const StepInputs& in) {
  const ConvPlan& plan = plan_for(in.n);
  launch_gather_normalize(gather_args(in), s());
  forward(in.n, plan);
  launch_softmax_xent(softmax_args(in, false), s());
}

void CudnnPath::update(const CapturedStep& step, const StepInputs& in) {
  if (in.n == 0) return;
  const GatherArgs g = gather_args(in);
  const SoftmaxArgs l = softmax_args(in, true);
  set_node_args(step.exec.get(), step.nodes[std::size_t(StepNode::Input)], g);
  set_node_args(step.exec.get(), step.nodes[std::size_t(StepNode::Loss)], l);
}

// --- algorithms by measurement ---------------------------------------------------------

ConvTuning CudnnPath::measure(int n, const Deadline& deadline, const std::function<void()>& wait) {
  ConvPlan& p = plan_for(n);
  if (measure_workspace_.bytes() < p.candidate_workspace) measure_workspace_.allocate(p.candidate_workspace);
  ConvTuning t;
  t.passes.resize(kConvPasses);
  for (int pass = 0; pass < kConvPasses; ++pass) {
    PassTimings& pt = t.passes[std::size_t(pass)];
    pt.participates = 1;
    const auto& cands = p.candidates[std::size_t(pass)];
    for (std::size_t i = 0; i < cands.size(); ++i) {
      const int a = cands[i].algo;
      pt.rank_order[std::size_t(a)] = static_cast<int8_t>(i);
      if (deadline.passed()) {
        pt.us[std::size_t(a)] = std::numeric_limits<float>::quiet_NaN();  // a candidate, not measured
        continue;
      }
      void* ws = measure_workspace_.get();
      const std::size_t bytes = measure_workspace_.bytes();
      try {
        run_pass(p, pass, a, ws, bytes);  // untimed: lazy loading, caches
        CUDA_CHECK(cudaEventRecord(t0_.get(), s()));
        for (int r = 0; r < kTimedRuns; ++r) run_pass(p, pass, a, ws, bytes);
        CUDA_CHECK(cudaEventRecord(t1_.get(), s()));
        wait();
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, t0_.get(), t1_.get()));
        pt.us[std::size_t(a)] = ms * 1000.0f / kTimedRuns;
      } catch (const StallError&) {
        throw;  // the device itself is stuck: nothing to choose between
      } catch (const DeviceError& e) {
        // The library refused this candidate at run time: not a candidate here after all.
        spdlog::debug("cuDNN {} at batch {}: {} failed when measured: {}", conv_pass_name(pass), n,
                      conv_algo_name(pass, a), e.what());
        pt.us[std::size_t(a)] = std::numeric_limits<float>::infinity();
      }
    }
  }
  return t;
}

void CudnnPath::choose(int n, const std::vector<AgreedAlgo>& agreed) {
  ConvPlan& p = plan_for(n);
  for (int pass = 0; pass < kConvPasses && pass < int(agreed.size()); ++pass) {
    const AgreedAlgo& a = agreed[std::size_t(pass)];
    if (a.algo < 0) continue;
    p.choose(pass, a.algo, a.measured ? "measured" : "heuristic", a.measured ? a.worst_us : -1.0f);
  }
  measure_workspace_.reset();
}

std::vector<ConvChoice> CudnnPath::choices(const std::vector<int>& batches) const {
  std::vector<ConvChoice> out;
  for (int n : batches) {
    const auto it = plans_.find(n);
    if (it == plans_.end()) continue;
    for (int pass = 0; pass < kConvPasses; ++pass) out.push_back(it->second.report(pass));
  }
  return out;
}

}  // namespace

std::unique_ptr<StepPath> make_cudnn_path(const PathContext& ctx, cudnnHandle_t cudnn, cublasHandle_t cublas) {
  return std::make_unique<CudnnPath>(ctx, cudnn, cublas);
}

BucketRange bucket_range(int bucket, std::size_t param_count) {
  const std::size_t conv2 = param_tensors()[kConv2W].offset;   // the conv offsets do not depend on the width
  return bucket == 0 ? BucketRange{conv2, param_count - conv2} : BucketRange{0, conv2};
}

}  // namespace mb::cuda

// The fused step path (step_path.h, --cuda-path fused): eight own kernels per step
// (fused_kernels.h), so a captured step is at most 12 graph nodes with the two all-reduce
// buckets and Adam. FP32 arithmetic in every precision (no tensor-core kernels yet: a TF32
// run on this path computes in FP32, and says so in its log). The dense width is a run-time
// value here. Not the default until the first GPU run has validated it (the kernel lab
// compares every kernel with the CPU emulator and times both paths side by side).
#include <spdlog/spdlog.h>

#include "backends/cuda/fused_kernels.h"
#include "backends/cuda/step_path.h"
#include "backends/fused/fused_emulator.h"
#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

using fused::FusedArgs;

class FusedPath final : public StepPath {
 public:
  explicit FusedPath(const PathContext& ctx) : ctx_(ctx) {
    MB_CHECK(fused::param_offsets(ctx.hidden).total == std::size_t(cnn::param_count(ctx.hidden)), ConfigError,
             "the fused path's parameter layout for a dense width of {} is not the model's", ctx.hidden);
    if (ctx.precision == Precision::Tf32)
      spdlog::info("--cuda-path fused computes in FP32: its kernels use no tensor cores yet");
    const std::size_t b = std::size_t(ctx.max_batch), hidden = std::size_t(ctx.hidden);
    idx_.allocate(b);
    p1_.allocate(b * fused::kC1 * fused::kP1Plane);
    a1_.allocate(p1_.size());
    g1_.allocate(p1_.size());
    p2_.allocate(b * fused::kFlat);
    a2_.allocate(p2_.size());
    g2_.allocate(p2_.size());
    h_.allocate(b * hidden);
    dh_.allocate(b * hidden);
    dlogits_.allocate(b * fused::kClasses);
    sample_stats_.allocate(b * 2);
    counter_.allocate(1);
    CUDA_CHECK(cudaMemsetAsync(counter_.get(), 0, counter_.bytes(), ctx.stream));
  }

  CudaPath kind() const override { return CudaPath::Fused; }
  void prepare(int) override {}

  void train(const StepInputs& in, StepCapture* capture, const std::function<void(int)>& bucket_ready,
             const std::function<void()>& mid_step) override {
    const FusedArgs a = args(in, true);
    launch(FusedKernel::Conv1Fwd, a);
    if (capture) capture->mark(StepNode::Input);
    launch(FusedKernel::Conv2Fwd, a);
    launch(FusedKernel::Fc1Fwd, a);
    launch(FusedKernel::Head, a);
    if (capture) capture->mark(StepNode::Loss);
    if (mid_step) mid_step();
    launch(FusedKernel::DenseBwd, a);
    launch(FusedKernel::Conv2Wgrad, a);
    bucket_ready(0);  // conv2 and the dense layers are final
    launch(FusedKernel::Conv2Dgrad, a);
    launch(FusedKernel::Conv1Wgrad, a);
    bucket_ready(1);
  }

  void evaluate(const StepInputs& in) override { launch_fused_forward(args(in, false), ctx_.stream); }

  void update(const CapturedStep& step, const StepInputs& in) override {
    if (in.n == 0) return;
    const FusedArgs a = args(in, true);
    set_node_args(step.exec.get(), step.nodes[std::size_t(StepNode::Input)], a);
    set_node_args(step.exec.get(), step.nodes[std::size_t(StepNode::Loss)], a);
  }

 private:
  void launch(FusedKernel k, const FusedArgs& a) { launch_fused(k, a, ctx_.stream); }

  FusedArgs args(const StepInputs& in, bool backward) const {
    FusedArgs a;
    a.n = in.n;
    a.hidden = ctx_.hidden;
    a.step_idx = in.idx;
    a.grad_scale = in.grad_scale;
    a.stats = in.stats;
    a.pixels = in.pixels;
    a.labels = in.labels;
    fused::bind_params(a, ctx_.params, ctx_.grads);
    a.idx = idx_.get();
    a.p1 = p1_.get(), a.a1 = a1_.get(), a.p2 = p2_.get(), a.a2 = a2_.get(), a.h = h_.get();
    a.dlogits = backward ? dlogits_.get() : nullptr;
    a.dh = dh_.get(), a.g2 = g2_.get(), a.g1 = g1_.get();
    a.sample_stats = sample_stats_.get();
    a.counter = counter_.get();
    return a;
  }

  const PathContext ctx_;
  DeviceBuffer<int32_t> idx_;
  DeviceBuffer<float> p1_, g1_, p2_, g2_, h_, dh_, dlogits_;
  DeviceBuffer<uint8_t> a1_, a2_;
  DeviceBuffer<double> sample_stats_;
  DeviceBuffer<unsigned> counter_;
};

}  // namespace

std::unique_ptr<StepPath> make_fused_path(const PathContext& ctx) { return std::make_unique<FusedPath>(ctx); }

}  // namespace mb::cuda

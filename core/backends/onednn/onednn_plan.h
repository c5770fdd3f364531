// The CPU engine's plan for the reference CNN family (conv32-pool-conv64-pool-denseN-dense10 on
// 28x28x1) at one batch size: every oneDNN primitive, own kernel call and activation buffer of
// a training step, created once and replayed each step (on the replica thread's OpenMP
// threads: one core by default). The own kernels are specialisations for exactly these shapes;
// make_step_plan (step_plan.h) chooses this plan only for a model of the family.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/conv1_pool.h"
#include "backends/onednn/step_plan.h"
#include "backends/onednn/winograd_conv2.h"
#include "config/engine_options.h"
#include "model/cnn_spec.h"

namespace mb::onednn {

// conv1+ReLU+pool1 is one fused loop (conv1_pool.h) writing nChw16c (or, for oneDNN's conv2,
// the layout it prefers); conv2+ReLU+pool2 is the own Winograd kernels, or oneDNN with a fused
// ReLU followed by the own pool2 loops (blocked_pool.h) (--cpu-conv2, config/engine_options.h:
// the own kernels by default, the faster as measured with bench/kernel_bench --layers on AVX2
// and AVX-512 alike, docs/benchmarks.md). Either way pool2 writes
// plain (N, C*H*W), exactly the flatten fc1 reads with its weights in PyTorch's [out, in]
// layout, so the dense layers need no reorders. The input is plain (N,1,28,28), the logits
// plain (N,10).
class NetPlan final : public StepPlan {
 public:
  // `params` and `grads` are the engine's flat buffers (cnn_spec layout for dense width
  // `hidden`); they must outlive the plan. Biases and, where the layouts agree, weight
  // gradients are bound to them in place. The conv layers' offsets do not depend on `hidden`.
  NetPlan(const dnnl::engine& engine, int batch, int hidden, const float* params, float* grads,
          Conv2Kernel conv2 = Conv2Kernel::Own);

  int batch() const override { return batch_; }
  float* input() override { return x_.data(); }                                              // N x 784
  const float* logits() const override { return static_cast<float*>(z_.get_data_handle()); } // N x 10
  float* logits_grad() override { return static_cast<float*>(dz_.get_data_handle()); }       // N x 10

  void sync_weights(dnnl::stream& stream, uint64_t version) override;
  // The family has no dropout: training or not, the forward is the same.
  void forward(dnnl::stream& stream, bool training, const SampleKeys& samples) override;
  void backward(dnnl::stream& stream) override;
  std::string describe() override;

 private:
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
    std::string name;
  };
  void run(dnnl::stream& stream, const Step& step);
  std::vector<Step*> primitive_steps();
  dnnl::memory make(const dnnl::memory::desc& desc);
  // A memory in `desc` fed from (or flushed to) `user`: bound in place when the layouts
  // agree, otherwise a private buffer plus a reorder step in weight_sync_ (grad_export_).
  dnnl::memory import_weights(const dnnl::memory::desc& desc, const dnnl::memory& user);
  dnnl::memory export_grads(const dnnl::memory::desc& desc, const dnnl::memory& user);
  void account(const dnnl::primitive_desc_base& pd);
  // A view of one parameter tensor of a flat buffer (params_ or grads_) in a PyTorch layout.
  dnnl::memory flat_view(const float* base, cnn::ParamId id, const dnnl::memory::dims& dims,
                         dnnl::memory::format_tag tag) const;
  dnnl::inner_product_forward::primitive_desc plan_dense_forward(const char* name, const dnnl::memory& src,
                                                                 const dnnl::memory::dims& w_dims, cnn::ParamId w_id,
                                                                 cnn::ParamId b_id, const dnnl::primitive_attr& attr,
                                                                 dnnl::memory& dst, Step& step);
  // One scratchpad for every step (they run one after another on one thread).
  void bind_scratchpad();
  void plan_dense_backward(const char* name, const dnnl::inner_product_forward::primitive_desc& fwd,
                           const dnnl::memory& src, const dnnl::memory::dims& w_dims, cnn::ParamId w_id,
                           cnn::ParamId b_id, const dnnl::memory& diff_dst, Step& bw_step, Step& bd_step,
                           dnnl::memory& diff_src);
  void plan_conv2_backward(const dnnl::convolution_forward::primitive_desc& fwd,
                           const dnnl::convolution_forward::primitive_desc& fwd_direct, bool winograd,
                           const dnnl::memory::dims& w_c2);

  dnnl::engine engine_;
  int batch_;
  dnnl::primitive_attr attr_;               // user scratchpad; shared by all steps
  dnnl::memory::dim scratch_bytes_ = 0;
  dnnl::memory scratch_;

  const float* params_;
  float* grads_;
  cnn::ParamLayout layout_{};                // of the flat buffers, for the model's dense width

  // Forward activations; arg1_/arg2_ hold each pooling window's argmax.
  std::vector<float> x_;
  dnnl::memory p1_, c2_, p2_, h1_, z_;
  std::vector<uint8_t> arg1_, arg2_;
  int block1_ = 16;                          // p1's channel block
  bool conv2_own_ = true;                  // Conv2Kernel::Own
  WinogradConv2Weights wino_;                // for the own conv2 passes
  PoolShape pool2_;
  // Backward activations.
  dnnl::memory dz_, dh1_, dp2_, dc2_, dp1_;

  // conv1 in the fused loop's [tap][channel] form, and its gradient accumulators.
  std::vector<float> conv1_taps_;
  std::vector<double> conv1_dtaps_, conv1_dbias_;

  std::vector<Step> weight_sync_;           // flat params -> primitive weight layouts
  std::vector<Step> grad_export_;           // primitive gradient layouts -> flat grads
  uint64_t weights_version_ = ~uint64_t{0};

  Step conv2_, fc1_, fc2_;
  Step fc2_bw_, fc2_bd_, fc1_bw_, fc1_bd_, conv2_bw_, conv2_bd_;
};

}  // namespace mb::onednn

// Any model (model/model_spec.h) compiled into per-layer oneDNN primitives for one batch size:
// convolutions and dense layers with their ReLU fused as a post-op, poolings with oneDNN's
// workspace, flatten as a view, and the two loops oneDNN lacks (the ReLU mask of backward and
// dropout, whose masks are model/dropout.h's pure function of the sample). Every activation
// keeps the layout its producer chose (blocked for convolutions on AVX-512/AVX2); a dense layer
// reads a plain copy of a blocked one, with the flat buffer's PyTorch-layout weights in place.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/conv_wgrad.h"
#include "backends/onednn/step_plan.h"

namespace mb::onednn {

class LayerPlan final : public StepPlan {
 public:
  LayerPlan(const dnnl::engine& engine, int batch, const ModelSpec& model, const float* params, float* grads);

  int batch() const override { return batch_; }
  float* input() override { return static_cast<float*>(x_.get_data_handle()); }
  const float* logits() const override { return static_cast<float*>(out_.back().get_data_handle()); }
  float* logits_grad() override { return static_cast<float*>(d_out_.back().get_data_handle()); }

  void sync_weights(dnnl::stream& stream, uint64_t version) override;
  void forward(dnnl::stream& stream, bool training, const SampleKeys& samples) override;
  void backward(dnnl::stream& stream) override;
  std::string describe() override;

 private:
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
  };
  // One layer's work, in the order forward and backward run it.
  struct LayerSteps {
    std::string name;                      // the layer's name (model_shape.h): "conv1", "pool2"
    std::vector<Step> fwd, bwd_w, bwd_d;   // oneDNN primitives (training forward)
    std::vector<Step> infer;               // forward for validation where it differs (poolings: no workspace)
    bool relu = false;                     // backward starts with d_out *= (out > 0)...
    bool relu_folded = false;              // ...unless an own kernel reading d_out applies it
    std::vector<std::string> impl;         // implementation names, for describe()
  };

  void plan_layer(std::size_t i, const dnnl::memory& src);
  void plan_conv(std::size_t i, const dnnl::memory& src);
  void plan_pool(std::size_t i, const dnnl::memory& src);
  void plan_dense(std::size_t i, const dnnl::memory& src);
  void plan_dropout(std::size_t i, const dnnl::memory& src);
  // The own max-pooling kernel (blocked_pool.h) where layer i's shape is one it was written
  // for; false leaves the layer to oneDNN.
  bool plan_own_max_pool(std::size_t i, const dnnl::memory& src);
  // Mask or copy layer i's input into its output (dropout), and the backward of that.
  void dropout_forward(std::size_t i, bool training, const SampleKeys& samples);
  void dropout_backward(std::size_t i);

  dnnl::memory make(const dnnl::memory::desc& desc);
  Step reorder_step(const dnnl::memory& from, const dnnl::memory& to);
  // `m` itself when it is in `want`, else a copy in it, filled by a reorder appended to `steps`.
  dnnl::memory in_layout(const dnnl::memory& m, const dnnl::memory::desc& want, std::vector<Step>& steps);
  // A view of parameter tensor `index` of a flat buffer with `dims` in a plain layout.
  dnnl::memory flat_view(const float* base, int index, const dnnl::memory::dims& dims) const;
  // A memory in `desc` fed from (or flushed to) `user`: bound in place when the layouts agree,
  // otherwise a private buffer plus a reorder step in weight_sync_ (grad_export_).
  dnnl::memory import_weights(const dnnl::memory::desc& desc, const dnnl::memory& user);
  dnnl::memory export_grads(const dnnl::memory::desc& desc, const dnnl::memory& user);
  void account(const dnnl::primitive_desc_base& pd);
  void run(dnnl::stream& stream, const std::vector<Step>& steps);

  dnnl::engine engine_;
  int batch_;
  ModelSpec model_;
  const float* params_;
  float* grads_;
  dnnl::primitive_attr attr_;      // user scratchpad, shared by every step
  dnnl::memory::dim scratch_bytes_ = 0;
  dnnl::memory scratch_;

  dnnl::memory x_;                          // plain input
  std::vector<dnnl::memory> out_, d_out_;   // per layer; a Flatten shares its input's
  std::vector<LayerSteps> layers_;
  // Dropout layers: their input in plain layout (itself, or a copy reordered into it), the
  // mask of the last training forward, and the reorders to and from the plain copy.
  struct DropoutBuffers {
    dnnl::memory plain_in, plain_d_in;
    std::vector<Step> to_plain, from_plain;
    std::vector<uint8_t> kept;
  };
  std::unordered_map<std::size_t, DropoutBuffers> dropout_;
  // Max-pooling layers on the own kernel: the shape it sees (channels padded to its block), its
  // input, the argmax of the last forward, and what its backward masks the gradient by: its own
  // output when the layer before ends in a ReLU (max > 0 is that ReLU's derivative at the
  // argmax, so the layer before skips its mask pass), else ones.
  struct OwnPool {
    PoolShape shape;
    dnnl::memory in;
    std::vector<uint8_t> arg;
    std::vector<float> ones;
    const float* mask_by = nullptr;
  };
  std::unordered_map<std::size_t, OwnPool> own_pool_;
  // Convolutions whose weight gradient runs on the own loop: its shape, the plain input, and
  // the layer's ReLU output where the loop applies the ReLU mask as it reads the gradient (a
  // first layer: nothing else reads that gradient).
  struct OwnWgrad {
    ConvWgradShape shape;
    dnnl::memory src;
    dnnl::memory relu_out;
  };
  std::unordered_map<std::size_t, OwnWgrad> own_wgrad_;
  bool last_forward_training_ = false;

  std::vector<Step> weight_sync_, grad_export_;
  uint64_t weights_version_ = ~uint64_t{0};
};

}  // namespace mb::onednn

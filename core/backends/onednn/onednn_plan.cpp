// Builds and replays one training step: oneDNN primitives and the own kernels (see onednn_plan.h).
#include "backends/onednn/onednn_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;
using Dt = memory::data_type;

memory::desc plain(const memory::dims& dims, Tag tag) { return {dims, Dt::f32, tag}; }
memory::desc any(const memory::dims& dims) { return {dims, Dt::f32, Tag::any}; }

float* data_of(const memory& m) { return static_cast<float*>(m.get_data_handle()); }

// grad *= (act > 0): fc1's ReLU derivative from its output (both plain N x 64).
void relu_mask(const memory& act, const memory& grad) {
  const float* a = data_of(act);
  float* g = data_of(grad);
  const std::size_t count = act.get_desc().get_size() / sizeof(float);
  for (std::size_t i = 0; i < count; ++i) g[i] = a[i] > 0.0f ? g[i] : 0.0f;
}

Tag block_tag(int block) { return block == 16 ? Tag::nChw16c : block == 8 ? Tag::nChw8c : Tag::nchw; }

// The channel block of a 4-D activation layout, 0 when the pooling loops cannot read it.
int channel_block(const memory::desc& desc) {
  for (int block : {16, 8, 1})
    if (desc == plain(desc.dims(), block_tag(block))) return block;
  return 0;
}

}  // namespace

NetPlan::NetPlan(const dnnl::engine& engine, int batch, int hidden, const float* params, float* grads,
                 Conv2Kernel conv2)
    : engine_(engine), batch_(batch), params_(params), grads_(grads) {
  using namespace cnn;
  MB_CHECK(batch > 0, Error, "oneDNN plan: batch size {} must be positive", batch);
  attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::primitive_attr relu_attr;
  relu_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops relu;
  relu.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
  relu_attr.set_post_ops(relu);

  const memory::dim n = batch;
  layout_ = param_layout(hidden);
  const memory::dim width = hidden;   // the dense width is the model's (oneDNN sizes it here)
  // The parameter tensors' shapes (PyTorch layouts), viewed in the flat buffers by flat_view.
  const memory::dims w_c2{kConv2Out, kConv1Out, kKernel, kKernel},
      w_fc1{width, kFlat}, w_fc2{kClasses, width};
  const memory::dims c2_dims{n, kConv2Out, kConv2Side, kConv2Side};
  const memory::dims one{1, 1}, zero{0, 0};

  // ---- forward ----
  x_.assign(std::size_t(n) * kImagePixels, 0.0f);
  conv1_taps_.assign(kConv1Taps * kConv1Out, 0.0f);
  conv1_dtaps_.assign(kConv1Taps * kConv1Out, 0.0);
  conv1_dbias_.assign(kConv1Out, 0.0);

  // conv2 on the own Winograd kernels (with pool2 fused into them) or on oneDNN.
  conv2_own_ = conv2 == Conv2Kernel::Own;

  // p1 (the fused conv1 block's output) in the layout conv2 prefers, if the fused loop can
  // write it; nChw16c otherwise, and always for the own kernels.
  const memory::dims p1_dims{n, kConv1Out, kPool1Side, kPool1Side};
  block1_ = kWinogradBlock;
  if (!conv2_own_) {
    auto probe = dnnl::convolution_forward::primitive_desc(
        {prop_kind::forward_training, algorithm::convolution_direct, any(p1_dims), any(w_c2),
         plain({kConv2Out}, Tag::x), any(c2_dims), one, zero, zero},
        relu_attr, engine_);
    block1_ = channel_block(probe.src_desc());
    if (!conv1_block_supported(block1_)) block1_ = 16;
  }
  const memory::desc p1_desc = plain(p1_dims, block_tag(block1_));
  p1_ = make(p1_desc);
  arg1_.resize(p1_desc.get_size() / sizeof(float));

  auto conv2_pd = [&](algorithm alg, const memory::desc& dst) {
    return dnnl::convolution_forward::primitive_desc(
        {prop_kind::forward_training, alg, p1_.get_desc(), any(w_c2), plain({kConv2Out}, Tag::x), dst, one, zero,
         zero},
        relu_attr, engine_);
  };
  // The direct forward pd doubles as the layout hint for the direct backward kernels.
  dnnl::convolution_forward::primitive_desc c2_fwd_direct, c2_fwd;
  bool c2_wino = false;
  if (!conv2_own_) {
    c2_fwd_direct = conv2_pd(algorithm::convolution_direct, any(c2_dims));
    if (!pool_block_supported(channel_block(c2_fwd_direct.dst_desc())))
      c2_fwd_direct = conv2_pd(algorithm::convolution_direct, plain(c2_dims, Tag::nChw16c));
    c2_fwd = c2_fwd_direct;
    // oneDNN's Winograd F(4x4,3x3) (AVX-512 only) cuts conv2's forward and weight-gradient
    // arithmetic and is exact enough for FP32 training (see the backend-ops test); its
    // backward-data Winograd is slower than its direct kernel on this shape, so that one stays
    // direct. Conv2Kernel::OnednnDirect keeps it off Winograd altogether (for comparisons).
    if (conv2 == Conv2Kernel::Onednn) {
      try {
        c2_fwd = conv2_pd(algorithm::convolution_winograd, c2_fwd_direct.dst_desc());
        c2_wino = true;
      } catch (const dnnl::error&) {
        // No Winograd kernel for this ISA or layout: the direct one it is.
      }
    }
    account(c2_fwd);
    c2_ = make(c2_fwd.dst_desc());
    conv2_ = {dnnl::convolution_forward(c2_fwd),
              {{DNNL_ARG_SRC, p1_},
               {DNNL_ARG_WEIGHTS, import_weights(c2_fwd.weights_desc(), flat_view(params, kConv2W, w_c2, Tag::oihw))},
               {DNNL_ARG_BIAS, flat_view(params, kConv2B, {kConv2Out}, Tag::x)},
               {DNNL_ARG_DST, c2_}},
              fmt::format("conv2 fwd {}", c2_fwd.impl_info_str())};
  }

  // pool2 writes plain NCHW: per sample the C,H,W flatten fc1 expects. The own conv2 kernels
  // pool in their output transform and never store conv2's output (c2_ stays empty).
  pool2_ = {batch, kConv2Out, kConv2Side, kPool2Side, conv2_own_ ? kWinogradBlock : channel_block(c2_.get_desc()), 1};
  p2_ = make(plain({n, kFlat}, Tag::nc));
  arg2_.resize(std::size_t(n) * kFlat);

  // The dense layers use PyTorch's [out, in] weights as they are: no reorders either way.
  const auto fc1_fwd = plan_dense_forward("fc1", p2_, w_fc1, kFc1W, kFc1B, relu_attr, h1_, fc1_);
  const auto fc2_fwd = plan_dense_forward("fc2", h1_, w_fc2, kFc2W, kFc2B, attr_, z_, fc2_);

  // ---- backward ----
  dz_ = make(z_.get_desc());

  plan_dense_backward("fc2", fc2_fwd, h1_, w_fc2, kFc2W, kFc2B, dz_, fc2_bw_, fc2_bd_, dh1_);
  plan_dense_backward("fc1", fc1_fwd, p2_, w_fc1, kFc1W, kFc1B, dh1_, fc1_bw_, fc1_bd_, dp2_);

  dp1_ = make(p1_.get_desc());
  if (!conv2_own_) plan_conv2_backward(c2_fwd, c2_fwd_direct, c2_wino, w_c2);

  bind_scratchpad();
}

memory NetPlan::flat_view(const float* base, cnn::ParamId id, const memory::dims& dims, Tag tag) const {
  return memory(plain(dims, tag), engine_, const_cast<float*>(base) + layout_[id].offset);
}

// A dense layer's forward from `src` into a new `dst` (its bias and, with `attr`, a ReLU fused).
dnnl::inner_product_forward::primitive_desc NetPlan::plan_dense_forward(const char* name, const memory& src,
                                                                         const memory::dims& w_dims, cnn::ParamId w_id,
                                                                         cnn::ParamId b_id, const dnnl::primitive_attr& attr,
                                                                         memory& dst, Step& step) {
  const memory::dim n = batch_;
  const memory::dims b_dims{w_dims[0]};
  auto fwd = dnnl::inner_product_forward::primitive_desc(
      {prop_kind::forward_training, src.get_desc(), plain(w_dims, Tag::oi), plain(b_dims, Tag::x),
       plain({n, w_dims[0]}, Tag::nc)},
      attr, engine_);
  account(fwd);
  dst = make(fwd.dst_desc());
  step = {dnnl::inner_product_forward(fwd),
          {{DNNL_ARG_SRC, src},
           {DNNL_ARG_WEIGHTS, import_weights(fwd.weights_desc(), flat_view(params_, w_id, w_dims, Tag::oi))},
           {DNNL_ARG_BIAS, flat_view(params_, b_id, b_dims, Tag::x)},
           {DNNL_ARG_DST, dst}},
          fmt::format("{} fwd {}", name, fwd.impl_info_str())};
  return fwd;
}

void NetPlan::bind_scratchpad() {
  // One scratchpad for every step: they run one after another on one thread.
  scratch_ = memory(memory::desc({std::max<memory::dim>(scratch_bytes_, 1)}, Dt::u8, Tag::x), engine_);
  for (Step* s : primitive_steps()) s->args.emplace(DNNL_ARG_SCRATCHPAD, scratch_);
  for (auto* steps : {&weight_sync_, &grad_export_})
    for (auto& s : *steps) s.args.emplace(DNNL_ARG_SCRATCHPAD, scratch_);
}

// A dense layer's backward: weight and bias gradients straight into the flat buffer, then the
// data gradient for the layer below (allocated here as diff_src).
void NetPlan::plan_dense_backward(const char* name, const dnnl::inner_product_forward::primitive_desc& fwd,
                                  const memory& src, const memory::dims& w_dims, cnn::ParamId w_id,
                                  cnn::ParamId b_id, const memory& diff_dst, Step& bw_step, Step& bd_step, memory& diff_src) {
  const memory::dims b_dims{w_dims[0]};
  auto bw = dnnl::inner_product_backward_weights::primitive_desc(
      {src.get_desc(), plain(w_dims, Tag::oi), plain(b_dims, Tag::x), diff_dst.get_desc()}, attr_, engine_, fwd);
  account(bw);
  bw_step = {dnnl::inner_product_backward_weights(bw),
             {{DNNL_ARG_SRC, src},
              {DNNL_ARG_DIFF_DST, diff_dst},
              {DNNL_ARG_DIFF_WEIGHTS, export_grads(bw.diff_weights_desc(), flat_view(grads_, w_id, w_dims, Tag::oi))},
              {DNNL_ARG_DIFF_BIAS, flat_view(grads_, b_id, b_dims, Tag::x)}},
             fmt::format("{} bwd-w {}", name, bw.impl_info_str())};

  auto bd = dnnl::inner_product_backward_data::primitive_desc(
      {src.get_desc(), plain(w_dims, Tag::oi), diff_dst.get_desc()}, attr_, engine_, fwd);
  account(bd);
  diff_src = make(src.get_desc());
  bd_step = {dnnl::inner_product_backward_data(bd),
             {{DNNL_ARG_DIFF_DST, diff_dst},
              {DNNL_ARG_WEIGHTS, import_weights(bd.weights_desc(), flat_view(params_, w_id, w_dims, Tag::oi))},
              {DNNL_ARG_DIFF_SRC, diff_src}},
             fmt::format("{} bwd-d {}", name, bd.impl_info_str())};
}

// conv2's backward on oneDNN (when the own Winograd kernels do not run it): weight gradient by
// Winograd where the forward was and the ISA has one, else direct; data gradient direct.
void NetPlan::plan_conv2_backward(const dnnl::convolution_forward::primitive_desc& fwd,
                                  const dnnl::convolution_forward::primitive_desc& fwd_direct, bool winograd,
                                  const memory::dims& w_c2) {
  using namespace cnn;
  const memory::dims one{1, 1}, zero{0, 0};
  dc2_ = make(c2_.get_desc());
  auto conv2_bw_pd = [&](algorithm alg, const dnnl::convolution_forward::primitive_desc& hint) {
    return dnnl::convolution_backward_weights::primitive_desc(
        {alg, p1_.get_desc(), any(w_c2), plain({kConv2Out}, Tag::x), dc2_.get_desc(), one, zero, zero}, attr_,
        engine_, hint);
  };
  dnnl::convolution_backward_weights::primitive_desc conv2_bw;
  if (winograd) {
    try {
      conv2_bw = conv2_bw_pd(algorithm::convolution_winograd, fwd);
    } catch (const dnnl::error&) {
    }
  }
  if (!conv2_bw) conv2_bw = conv2_bw_pd(algorithm::convolution_direct, fwd_direct);
  account(conv2_bw);
  conv2_bw_ = {
      dnnl::convolution_backward_weights(conv2_bw),
      {{DNNL_ARG_SRC, p1_},
       {DNNL_ARG_DIFF_DST, dc2_},
       {DNNL_ARG_DIFF_WEIGHTS, export_grads(conv2_bw.diff_weights_desc(), flat_view(grads_, kConv2W, w_c2, Tag::oihw))},
       {DNNL_ARG_DIFF_BIAS, flat_view(grads_, kConv2B, {kConv2Out}, Tag::x)}},
      fmt::format("conv2 bwd-w {}", conv2_bw.impl_info_str())};

  auto conv2_bd = dnnl::convolution_backward_data::primitive_desc(
      {algorithm::convolution_direct, p1_.get_desc(), any(w_c2), dc2_.get_desc(), one, zero, zero}, attr_,
      engine_, fwd_direct);
  account(conv2_bd);
  conv2_bd_ = {dnnl::convolution_backward_data(conv2_bd),
               {{DNNL_ARG_DIFF_DST, dc2_},
                {DNNL_ARG_WEIGHTS, import_weights(conv2_bd.weights_desc(), flat_view(params_, kConv2W, w_c2, Tag::oihw))},
                {DNNL_ARG_DIFF_SRC, dp1_}},
               fmt::format("conv2 bwd-d {}", conv2_bd.impl_info_str())};
}

memory NetPlan::make(const memory::desc& desc) { return memory(desc, engine_); }

void NetPlan::account(const dnnl::primitive_desc_base& pd) {
  scratch_bytes_ = std::max<memory::dim>(scratch_bytes_, static_cast<memory::dim>(pd.scratchpad_desc().get_size()));
}

memory NetPlan::import_weights(const memory::desc& desc, const memory& user) {
  if (desc == user.get_desc()) return user;
  memory mine = make(desc);
  dnnl::reorder::primitive_desc pd(user, mine, attr_);
  account(pd);
  weight_sync_.push_back({dnnl::reorder(pd), {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, mine}}, "weights reorder"});
  return mine;
}

memory NetPlan::export_grads(const memory::desc& desc, const memory& user) {
  if (desc == user.get_desc()) return user;
  memory mine = make(desc);
  dnnl::reorder::primitive_desc pd(mine, user, attr_);
  account(pd);
  grad_export_.push_back({dnnl::reorder(pd), {{DNNL_ARG_FROM, mine}, {DNNL_ARG_TO, user}}, "grads reorder"});
  return mine;
}

void NetPlan::run(dnnl::stream& stream, const Step& step) { step.prim.execute(stream, step.args); }

void NetPlan::sync_weights(dnnl::stream& stream, uint64_t version) {
  if (version == weights_version_) return;
  stage(stream, "weight reorders", [&] {
    conv1_weights_to_taps(params_ + cnn::param_tensors()[cnn::kConv1W].offset, conv1_taps_.data());
    if (conv2_own_) winograd_conv2_set_weights(params_ + cnn::param_tensors()[cnn::kConv2W].offset, wino_);
    for (const auto& s : weight_sync_) run(stream, s);
  });
  stream.wait();
  weights_version_ = version;
}

std::vector<NetPlan::Step*> NetPlan::primitive_steps() {
  std::vector<Step*> out;
  for (Step* s : {&conv2_, &fc1_, &fc2_, &fc2_bw_, &fc2_bd_, &fc1_bw_, &fc1_bd_, &conv2_bw_, &conv2_bd_})
    if (s->prim) out.push_back(s);   // a conv2 pass on the own kernels has none
  return out;
}

void NetPlan::forward(dnnl::stream& stream, bool /*training*/, const SampleKeys& /*samples*/) {
  const auto& layout = cnn::param_tensors();
  stage(stream, "conv1+relu+pool1 fwd (own)", [&] {
    conv1_relu_pool_forward(batch_, x_.data(), conv1_taps_.data(), params_ + layout[cnn::kConv1B].offset, block1_,
                            data_of(p1_), arg1_.data());
  });
  stage(stream, "conv2+relu fwd", [&] {
    if (conv2_own_)   // pool2 included
      winograd_conv2_forward(wino_, batch_, data_of(p1_), params_ + layout[cnn::kConv2B].offset, nullptr, data_of(p2_),
                             arg2_.data());
    else
      run(stream, conv2_);
  });
  stream.wait();
  stage(stream, "pool2 fwd (own)", [&] {
    if (!conv2_own_) max_pool_forward(pool2_, data_of(c2_), data_of(p2_), arg2_.data());
  });
  stage(stream, "fc1+relu fwd", [&] { run(stream, fc1_); });
  stage(stream, "fc2 fwd", [&] { run(stream, fc2_); });
  stream.wait();
}

void NetPlan::backward(dnnl::stream& stream) {
  const auto& layout = cnn::param_tensors();
  auto ready = [&](int tensor) {
    if (gradient_ready) gradient_ready(std::size_t(layout[std::size_t(tensor)].layer));
  };
  stage(stream, "fc2 bwd-w", [&] { run(stream, fc2_bw_); });
  stream.wait();
  ready(cnn::kFc2W);
  stage(stream, "fc2 bwd-d", [&] { run(stream, fc2_bd_); });
  stream.wait();
  stage(stream, "fc1 relu mask", [&] { relu_mask(h1_, dh1_); });
  stage(stream, "fc1 bwd-w", [&] { run(stream, fc1_bw_); });
  stream.wait();
  ready(cnn::kFc1W);
  stage(stream, "fc1 bwd-d", [&] { run(stream, fc1_bd_); });
  stream.wait();
  stage(stream, "pool2+relu bwd (own)", [&] {
    if (!conv2_own_) max_pool_backward_relu(pool2_, data_of(dp2_), data_of(p2_), arg2_.data(), data_of(dc2_));
  });
  stage(stream, "conv2 bwd-w", [&] {
    if (!conv2_own_) run(stream, conv2_bw_);
  });
  stage(stream, "conv2 bwd-d", [&] {
    if (!conv2_own_) run(stream, conv2_bd_);
  });
  // Both gradients in one call (they share the transform of the output gradient), with
  // pool2's backward fused in.
  stage(stream, "conv2 bwd own (w and d)", [&] {
    if (!conv2_own_) return;
    Conv2OutputGrad g;
    g.pooled = data_of(p2_);
    g.d_pooled = data_of(dp2_);
    g.arg = arg2_.data();
    winograd_conv2_backward(wino_, batch_, data_of(p1_), g, data_of(dp1_), grads_ + layout[cnn::kConv2W].offset,
                            grads_ + layout[cnn::kConv2B].offset);
  });
  stream.wait();
  stage(stream, "gradient reorders", [&] {
    for (const auto& s : grad_export_) run(stream, s);
  });
  stream.wait();
  ready(cnn::kConv2W);
  stage(stream, "conv1 bwd-w (own)", [&] {
    conv1_relu_pool_backward(batch_, x_.data(), data_of(p1_), data_of(dp1_), arg1_.data(), block1_,
                             conv1_dtaps_.data(), conv1_dbias_.data());
    conv1_taps_to_weights(conv1_dtaps_.data(), grads_ + layout[cnn::kConv1W].offset);
    float* dbias = grads_ + layout[cnn::kConv1B].offset;
    for (int c = 0; c < cnn::kConv1Out; ++c) dbias[c] = static_cast<float>(conv1_dbias_[c]);
  });
  ready(cnn::kConv1W);
}

std::string NetPlan::describe() {
  std::string out = fmt::format("batch {}:", batch_);
  for (const Step* s : primitive_steps()) out += fmt::format(" [{}]", s->name);
  if (conv2_own_) out += " [conv2+pool2 fwd, bwd-w and bwd-d: own winograd F(4x4,3x3)]";
  out += fmt::format(" [fused conv1+pool1 writing block {}] [{}] + {} weight and {} gradient reorders", block1_,
                     conv2_own_ ? std::string("pool2 fused into conv2")
                                : fmt::format("pool2 from block {}", pool2_.in_block),
                     weight_sync_.size(), grad_export_.size());
  return out;
}

}  // namespace mb::onednn

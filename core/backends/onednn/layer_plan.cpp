// Compiles a model's layers into oneDNN primitives and replays them (see layer_plan.h).
#include "backends/onednn/layer_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "backends/onednn/conv_wgrad.h"
#include "util/error.h"

namespace mb::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;
using Dt = memory::data_type;

memory::desc plain_desc(const memory::dims& dims) {
  return {dims, Dt::f32, dims.size() == 4 ? Tag::nchw : dims.size() == 2 ? Tag::nc : Tag::x};
}
memory::desc any(const memory::dims& dims) { return {dims, Dt::f32, Tag::any}; }
float* data_of(const memory& m) { return static_cast<float*>(m.get_data_handle()); }
bool is_plain(const memory::desc& d) { return d == plain_desc(d.dims()); }

memory::dims image_dims(int n, const ImageShape& s) { return {n, s.c, s.h, s.w}; }

// A forward primitive's attributes: the shared scratchpad and, with `relu`, the fused ReLU. (A
// new object: primitive_attr is a handle, so a copy of attr_ would share its post-ops.)
dnnl::primitive_attr forward_attr(bool relu) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return attr;
}

}  // namespace

LayerPlan::LayerPlan(const dnnl::engine& engine, int batch, const ModelSpec& model, const float* params, float* grads)
    : engine_(engine), batch_(batch), model_(model), params_(params), grads_(grads) {
  MB_CHECK(batch > 0, Error, "oneDNN plan: batch size {} must be positive", batch);
  attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const ModelShape& m = model_.shape();
  x_ = make(plain_desc(image_dims(batch, m.input)));
  out_.resize(m.layers.size());
  d_out_.resize(m.layers.size());
  layers_.resize(m.layers.size());
  memory src = x_;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const LayerShape& l = m.layers[i];
    layers_[i].name = l.name;
    try {
      plan_layer(i, src);
    } catch (const dnnl::error& e) {
      throw DeviceError(fmt::format("oneDNN cannot plan layer {} ({}, batch {}): {} (status {})", l.name,
                                    keras_class(l.layer.kind), batch, e.what(), int(e.status)));
    }
    src = out_[i];
  }
  // One scratchpad for every step: they run one after another on one thread.
  scratch_ = memory(memory::desc({std::max<memory::dim>(scratch_bytes_, 1)}, Dt::u8, Tag::x), engine_);
  auto bind = [&](std::vector<Step>& steps) {
    for (Step& s : steps) s.args.emplace(DNNL_ARG_SCRATCHPAD, scratch_);
  };
  for (LayerSteps& ls : layers_)
    for (auto* steps : {&ls.fwd, &ls.infer, &ls.bwd_w, &ls.bwd_d}) bind(*steps);
  bind(weight_sync_);
  bind(grad_export_);
}

void LayerPlan::plan_layer(std::size_t i, const memory& src) {
  switch (model_.shape().layers[i].layer.kind) {
    case LayerKind::Conv2D: plan_conv(i, src); break;
    case LayerKind::MaxPool:
    case LayerKind::AvgPool:
    case LayerKind::GlobalAvgPool: plan_pool(i, src); break;
    case LayerKind::Dense: plan_dense(i, src); break;
    case LayerKind::Dropout: plan_dropout(i, src); break;
    case LayerKind::Flatten:   // a view: C, H, W order is what the next dense layer's weights expect
      out_[i] = src;
      d_out_[i] = i == 0 ? make(src.get_desc()) : d_out_[i - 1];
      break;
  }
}

memory LayerPlan::make(const memory::desc& desc) { return memory(desc, engine_); }

memory LayerPlan::flat_view(const float* base, int index, const memory::dims& dims) const {
  const Tag tag = dims.size() == 4 ? Tag::oihw : dims.size() == 2 ? Tag::oi : Tag::x;
  return memory(memory::desc(dims, Dt::f32, tag), engine_, const_cast<float*>(base) + model_.shape().params[std::size_t(index)].offset);
}

void LayerPlan::account(const dnnl::primitive_desc_base& pd) {
  scratch_bytes_ = std::max<memory::dim>(scratch_bytes_, static_cast<memory::dim>(pd.scratchpad_desc().get_size()));
}

memory LayerPlan::import_weights(const memory::desc& desc, const memory& user) {
  if (desc == user.get_desc()) return user;
  memory mine = make(desc);
  dnnl::reorder::primitive_desc pd(user, mine, attr_);
  account(pd);
  weight_sync_.push_back({dnnl::reorder(pd), {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, mine}}});
  return mine;
}

memory LayerPlan::export_grads(const memory::desc& desc, const memory& user) {
  if (desc == user.get_desc()) return user;
  memory mine = make(desc);
  dnnl::reorder::primitive_desc pd(mine, user, attr_);
  account(pd);
  grad_export_.push_back({dnnl::reorder(pd), {{DNNL_ARG_FROM, mine}, {DNNL_ARG_TO, user}}});
  return mine;
}

// Conv2D (stride 1; "same" pads (K-1)/2 on each side) with its bias and ReLU fused; its output
// in the layout oneDNN prefers.
void LayerPlan::plan_conv(std::size_t i, const memory& src) {
  const LayerShape& l = model_.shape().layers[i];
  LayerSteps& ls = layers_[i];
  const int n = batch_, k = l.layer.kernel, pad = l.layer.padding == Padding::Same ? (k - 1) / 2 : 0;
  const memory::dims w_dims{l.out.c, l.in.c, k, k}, b_dims{l.out.c}, dst_dims = image_dims(n, l.out);
  const memory::dims strides{1, 1}, pads{pad, pad};
  const bool bias = l.bias >= 0;
  ls.relu = l.layer.activation == Activation::Relu;
  const dnnl::primitive_attr attr = forward_attr(ls.relu);
  // The source in the layout the convolution prefers (few input channels or a pooling's
  // output may come in one only a reference kernel reads): reordered into it when it differs.
  using Fwd = dnnl::convolution_forward;
  const memory::desc src_any = any(src.get_desc().dims());
  const auto fwd = bias ? Fwd::primitive_desc({prop_kind::forward_training, algorithm::convolution_direct, src_any,
                                               any(w_dims), plain_desc(b_dims), any(dst_dims), strides, pads, pads},
                                              attr, engine_)
                        : Fwd::primitive_desc({prop_kind::forward_training, algorithm::convolution_direct, src_any,
                                               any(w_dims), any(dst_dims), strides, pads, pads},
                                              attr, engine_);
  account(fwd);
  memory conv_src = src;
  if (fwd.src_desc() != src.get_desc()) {
    conv_src = make(fwd.src_desc());
    ls.fwd.push_back(reorder_step(src, conv_src));
    ls.impl.push_back("src reorder");
  }
  out_[i] = make(fwd.dst_desc());
  d_out_[i] = make(fwd.dst_desc());
  Step f{Fwd(fwd), {{DNNL_ARG_SRC, conv_src},
                    {DNNL_ARG_WEIGHTS, import_weights(fwd.weights_desc(), flat_view(params_, l.weight, w_dims))},
                    {DNNL_ARG_DST, out_[i]}}};
  if (bias) f.args.emplace(DNNL_ARG_BIAS, flat_view(params_, l.bias, b_dims));
  ls.fwd.push_back(std::move(f));
  ls.impl.push_back(fmt::format("fwd {}", fwd.impl_info_str()));

  // The weight gradient: the own loop where few input channels meet a blocked gradient
  // (conv_wgrad.h), else oneDNN's, in the layouts its fastest kernels want (the forward's are
  // not always theirs: a few input channels read plain forward, blocked backward), reordered
  // where they differ.
  memory bw_ddst = d_out_[i];
  const memory::desc& dd = d_out_[i].get_desc();
  const int block = dd == memory::desc(dst_dims, Dt::f32, Tag::nChw8c)    ? 8
                    : dd == memory::desc(dst_dims, Dt::f32, Tag::nChw16c) ? 16
                                                                          : 0;
  const ConvWgradShape ws{n, l.in.c, l.in.h, l.in.w, l.out.c, l.out.h, l.out.w, k, pad, block};
  if (is_plain(conv_src.get_desc()) && conv_wgrad_supported(ws)) {
    const bool fold = ls.relu && !l.needs_input_grad;
    own_wgrad_[i] = {ws, conv_src, fold ? out_[i] : memory()};
    ls.relu_folded = fold;
    ls.impl.push_back(fmt::format("bwd-w own (few channels, blocked by {}{})", block, fold ? ", ReLU mask folded" : ""));
  } else {
    using BwdW = dnnl::convolution_backward_weights;
    const memory::desc dst_any = any(dst_dims);
    const auto bw = bias ? BwdW::primitive_desc({algorithm::convolution_direct, src_any, any(w_dims),
                                                 plain_desc(b_dims), dst_any, strides, pads, pads},
                                                attr_, engine_, fwd)
                         : BwdW::primitive_desc({algorithm::convolution_direct, src_any, any(w_dims), dst_any, strides,
                                                 pads, pads},
                                                attr_, engine_, fwd);
    account(bw);
    const memory bw_src = in_layout(conv_src, bw.src_desc(), ls.bwd_w);
    bw_ddst = in_layout(d_out_[i], bw.diff_dst_desc(), ls.bwd_w);
    Step w{BwdW(bw), {{DNNL_ARG_SRC, bw_src},
                      {DNNL_ARG_DIFF_DST, bw_ddst},
                      {DNNL_ARG_DIFF_WEIGHTS, export_grads(bw.diff_weights_desc(), flat_view(grads_, l.weight, w_dims))}}};
    if (bias) w.args.emplace(DNNL_ARG_DIFF_BIAS, flat_view(grads_, l.bias, b_dims));
    ls.bwd_w.push_back(std::move(w));
    ls.impl.push_back(fmt::format("bwd-w {}", bw.impl_info_str()));
  }

  if (!l.needs_input_grad) return;
  using BwdD = dnnl::convolution_backward_data;
  const auto bd = BwdD::primitive_desc({algorithm::convolution_direct, src_any, any(w_dims), any(dst_dims), strides,
                                        pads, pads},
                                       attr_, engine_, fwd);
  account(bd);
  // bwd-w runs first: its copy of the output gradient serves bwd-d when the layouts agree.
  const memory bd_ddst = bd.diff_dst_desc() == bw_ddst.get_desc() ? bw_ddst : in_layout(d_out_[i], bd.diff_dst_desc(), ls.bwd_d);
  const memory d_src = bd.diff_src_desc() == d_out_[i - 1].get_desc() ? d_out_[i - 1] : make(bd.diff_src_desc());
  ls.bwd_d.push_back({BwdD(bd), {{DNNL_ARG_DIFF_DST, bd_ddst},
                                 {DNNL_ARG_WEIGHTS, import_weights(bd.weights_desc(), flat_view(params_, l.weight, w_dims))},
                                 {DNNL_ARG_DIFF_SRC, d_src}}});
  if (d_src != d_out_[i - 1]) ls.bwd_d.push_back(reorder_step(d_src, d_out_[i - 1]));
  ls.impl.push_back(fmt::format("bwd-d {}", bd.impl_info_str()));
}

memory LayerPlan::in_layout(const memory& m, const memory::desc& want, std::vector<Step>& steps) {
  if (m.get_desc() == want) return m;
  memory copy = make(want);
  steps.push_back(reorder_step(m, copy));
  return copy;
}

LayerPlan::Step LayerPlan::reorder_step(const memory& from, const memory& to) {
  dnnl::reorder::primitive_desc pd(from, to, attr_);
  account(pd);
  return {dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}};
}

// 2 x 2 max or average pooling with stride 2 (TF's "same": padding at the bottom and right, the
// average over the window's real pixels), and global average pooling as one window per plane.
void LayerPlan::plan_pool(std::size_t i, const memory& src) {
  if (plan_own_max_pool(i, src)) return;
  const LayerShape& l = model_.shape().layers[i];
  LayerSteps& ls = layers_[i];
  const bool global = l.layer.kind == LayerKind::GlobalAvgPool;
  const algorithm alg = l.layer.kind == LayerKind::MaxPool ? algorithm::pooling_max : algorithm::pooling_avg_exclude_padding;
  const memory::dims kernel = global ? memory::dims{l.in.h, l.in.w} : memory::dims{2, 2};
  const memory::dims strides = global ? memory::dims{1, 1} : memory::dims{2, 2};
  const memory::dims pad_l{0, 0};
  const memory::dims pad_r = global ? memory::dims{0, 0}
                                    : memory::dims{l.out.h * 2 - l.in.h > 0 ? l.out.h * 2 - l.in.h : 0,
                                                   l.out.w * 2 - l.in.w > 0 ? l.out.w * 2 - l.in.w : 0};
  const memory::dims dst_dims{batch_, l.in.c, global ? 1 : l.out.h, global ? 1 : l.out.w};
  using Fwd = dnnl::pooling_forward;
  const auto fwd = Fwd::primitive_desc(
      {prop_kind::forward_training, alg, src.get_desc(), any(dst_dims), strides, kernel, pad_l, pad_r}, attr_, engine_);
  account(fwd);
  out_[i] = make(fwd.dst_desc());
  d_out_[i] = make(fwd.dst_desc());
  Step f{Fwd(fwd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, out_[i]}}};
  memory workspace;
  if (fwd.workspace_desc().get_size() > 0) {
    workspace = make(fwd.workspace_desc());
    f.args.emplace(DNNL_ARG_WORKSPACE, workspace);
  }
  ls.fwd.push_back(std::move(f));
  ls.impl.push_back(fmt::format("fwd {}", fwd.impl_info_str()));
  // Validation needs no workspace: an inference primitive writes the same output without it.
  const auto inf = Fwd::primitive_desc(
      {prop_kind::forward_inference, alg, src.get_desc(), fwd.dst_desc(), strides, kernel, pad_l, pad_r}, attr_, engine_);
  account(inf);
  ls.infer.push_back({Fwd(inf), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, out_[i]}}});

  if (!l.needs_input_grad) return;
  using Bwd = dnnl::pooling_backward;
  const auto bd = Bwd::primitive_desc({alg, src.get_desc(), fwd.dst_desc(), strides, kernel, pad_l, pad_r}, attr_,
                                      engine_, fwd);
  account(bd);
  Step b{Bwd(bd), {{DNNL_ARG_DIFF_DST, d_out_[i]}, {DNNL_ARG_DIFF_SRC, d_out_[i - 1]}}};
  if (workspace) b.args.emplace(DNNL_ARG_WORKSPACE, workspace);
  ls.bwd_d.push_back(std::move(b));
  ls.impl.push_back(fmt::format("bwd {}", bd.impl_info_str()));
}

// oneDNN's pooling kernels cost as much as a convolution on small images (lenet5's pool1 took
// 7 ms of a 27 ms step on AVX2): a valid 2 x 2 max-pooling of a square image whose layout the
// own kernel reads (plain, or channels blocked by 8 or 16) runs on it, output in the input's
// layout. Selection only: the same bits as oneDNN's and the reference's (first max on ties).
bool LayerPlan::plan_own_max_pool(std::size_t i, const memory& src) {
  const LayerShape& l = model_.shape().layers[i];
  if (l.layer.kind != LayerKind::MaxPool || l.layer.padding != Padding::Valid || l.in.h != l.in.w) return false;
  const memory::dims dims = src.get_desc().dims();
  const Tag tags[] = {Tag::nchw, Tag::nChw8c, Tag::nChw16c};
  const int blocks[] = {1, 8, 16};
  int block = 0;
  for (int t = 0; t < 3; ++t)
    if (src.get_desc() == memory::desc(dims, Dt::f32, tags[t])) block = blocks[t];
  if (block == 0 || !pool_block_supported(block)) return false;
  const Tag tag = block == 1 ? Tag::nchw : block == 8 ? Tag::nChw8c : Tag::nChw16c;
  OwnPool& p = own_pool_[i];
  p.shape = {batch_, (l.in.c + block - 1) / block * block, l.in.h, l.out.h, block, block};
  p.in = src;
  const memory::desc dst(memory::dims{batch_, l.in.c, l.out.h, l.out.w}, Dt::f32, tag);
  out_[i] = make(dst);
  d_out_[i] = make(dst);
  const std::size_t count = dst.get_size() / sizeof(float);
  p.arg.resize(count);
  LayerSteps& before = layers_[i - (i > 0 ? 1 : 0)];
  const bool fold = i > 0 && before.relu && !before.relu_folded;
  if (fold) {
    p.mask_by = data_of(out_[i]);
    before.relu_folded = true;
  } else {
    p.ones.assign(count, 1.0f);
    p.mask_by = p.ones.data();
  }
  layers_[i].impl.push_back(fmt::format("own max-pool ({}{})", block == 1 ? "plain" : fmt::format("blocked by {}", block),
                                        fold ? fmt::format(", {}'s ReLU mask folded", before.name) : ""));
  return true;
}

// A dense layer as oneDNN's inner product over N x features in plain layout, the flat buffer's
// [out, in] weights and their gradient bound in place. A blocked input (a convolution's or
// pooling's) is reordered into a plain copy, and its gradient back: an activation moves fewer
// bytes than weights reordered into its layout every step and their gradient back (cnn-cifar's
// fc1, 512 x 2304: weight and gradient reorders 10 ms of a 240 ms step on AVX2, its activation's
// 0.3 ms), and the GEMMs run faster on the plain copy (fc1 forward 6.1 -> 4.1 ms).
void LayerPlan::plan_dense(std::size_t i, const memory& src_in) {
  const LayerShape& l = model_.shape().layers[i];
  LayerSteps& ls = layers_[i];
  const int n = batch_, units = l.layer.units;
  const memory::dims src_dims{n, memory::dim(l.in.size())}, w_dims{units, memory::dim(l.in.size())}, b_dims{units};
  const bool copy = !is_plain(src_in.get_desc());
  memory plain_in = src_in;
  if (copy) {
    plain_in = make(plain_desc(src_in.get_desc().dims()));
    ls.fwd.push_back(reorder_step(src_in, plain_in));
    ls.impl.push_back("plain copy of the input");
  }
  const memory src(plain_desc(src_dims), engine_, plain_in.get_data_handle());
  const bool bias = l.bias >= 0;
  ls.relu = l.layer.activation == Activation::Relu;
  const dnnl::primitive_attr attr = forward_attr(ls.relu);
  const memory::desc dst = plain_desc({n, units});
  const memory weights = flat_view(params_, l.weight, w_dims);
  using Fwd = dnnl::inner_product_forward;
  const auto fwd = bias ? Fwd::primitive_desc({prop_kind::forward_training, src.get_desc(), weights.get_desc(),
                                               plain_desc(b_dims), dst},
                                              attr, engine_)
                        : Fwd::primitive_desc({prop_kind::forward_training, src.get_desc(), weights.get_desc(), dst}, attr,
                                              engine_);
  account(fwd);
  out_[i] = make(dst);
  d_out_[i] = make(dst);
  Step f{Fwd(fwd), {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, out_[i]}}};
  if (bias) f.args.emplace(DNNL_ARG_BIAS, flat_view(params_, l.bias, b_dims));
  ls.fwd.push_back(std::move(f));
  ls.impl.push_back(fmt::format("fwd {}", fwd.impl_info_str()));

  using BwdW = dnnl::inner_product_backward_weights;
  const auto bw = bias ? BwdW::primitive_desc({src.get_desc(), weights.get_desc(), plain_desc(b_dims), dst}, attr_,
                                              engine_, fwd)
                       : BwdW::primitive_desc({src.get_desc(), weights.get_desc(), dst}, attr_, engine_, fwd);
  account(bw);
  Step w{BwdW(bw), {{DNNL_ARG_SRC, src},
                    {DNNL_ARG_DIFF_DST, d_out_[i]},
                    {DNNL_ARG_DIFF_WEIGHTS, flat_view(grads_, l.weight, w_dims)}}};
  if (bias) w.args.emplace(DNNL_ARG_DIFF_BIAS, flat_view(grads_, l.bias, b_dims));
  ls.bwd_w.push_back(std::move(w));
  ls.impl.push_back(fmt::format("bwd-w {}", bw.impl_info_str()));

  if (!l.needs_input_grad) return;
  using BwdD = dnnl::inner_product_backward_data;
  const auto bd = BwdD::primitive_desc({src.get_desc(), weights.get_desc(), dst}, attr_, engine_, fwd);
  account(bd);
  const memory d_plain = copy ? make(plain_in.get_desc()) : d_out_[i - 1];
  ls.bwd_d.push_back({BwdD(bd), {{DNNL_ARG_DIFF_DST, d_out_[i]},
                                 {DNNL_ARG_WEIGHTS, weights},
                                 {DNNL_ARG_DIFF_SRC, memory(plain_desc(src_dims), engine_, d_plain.get_data_handle())}}});
  if (copy) ls.bwd_d.push_back(reorder_step(d_plain, d_out_[i - 1]));
  ls.impl.push_back(fmt::format("bwd-d {}", bd.impl_info_str()));
}

// Dropout works on the plain C, H, W order its masks are defined in; a blocked input is
// reordered into a plain copy first (and its gradient back).
void LayerPlan::plan_dropout(std::size_t i, const memory& src) {
  const memory::desc plain = plain_desc(src.get_desc().dims());
  DropoutBuffers& b = dropout_[i];
  b.plain_in = src;
  if (!is_plain(src.get_desc())) {
    b.plain_in = make(plain);
    dnnl::reorder::primitive_desc to(src, b.plain_in, attr_);
    account(to);
    b.to_plain.push_back({dnnl::reorder(to), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, b.plain_in}}});
  }
  out_[i] = make(plain);
  d_out_[i] = make(plain);
  b.kept.resize(plain.get_size() / sizeof(float));
  layers_[i].impl.push_back(b.to_plain.empty() ? "own loop" : "own loop on a plain copy");
  if (!model_.shape().layers[i].needs_input_grad) return;
  b.plain_d_in = d_out_[i - 1];
  if (!is_plain(src.get_desc())) {
    b.plain_d_in = make(plain);
    dnnl::reorder::primitive_desc from(b.plain_d_in, d_out_[i - 1], attr_);
    account(from);
    b.from_plain.push_back({dnnl::reorder(from), {{DNNL_ARG_FROM, b.plain_d_in}, {DNNL_ARG_TO, d_out_[i - 1]}}});
  }
}

void LayerPlan::dropout_forward(std::size_t i, bool training, const SampleKeys& samples) {
  const LayerShape& l = model_.shape().layers[i];
  DropoutBuffers& b = dropout_.at(i);
  const float* x = data_of(b.plain_in);
  float* y = data_of(out_[i]);
  const std::size_t per = std::size_t(l.in.size());
  if (!training) {
    std::copy(x, x + per * std::size_t(batch_), y);
    return;
  }
  const float scale = dropout_scale(l.layer.rate);
  for (int s = 0; s < batch_; ++s) {
    const DropoutMask mask(samples.key, int(i), samples.id(s), l.layer.rate);
    for (std::size_t e = 0; e < per; ++e) {
      const std::size_t at = std::size_t(s) * per + e;
      const bool keep = mask.keeps(int64_t(e));
      b.kept[at] = keep;
      y[at] = keep ? x[at] * scale : 0.0f;
    }
  }
}

void LayerPlan::dropout_backward(std::size_t i) {
  DropoutBuffers& b = dropout_.at(i);
  const float scale = dropout_scale(model_.shape().layers[i].layer.rate);
  const float* d = data_of(d_out_[i]);
  float* dx = data_of(b.plain_d_in);
  for (std::size_t e = 0; e < b.kept.size(); ++e) dx[e] = b.kept[e] ? d[e] * scale : 0.0f;
}

void LayerPlan::run(dnnl::stream& stream, const std::vector<Step>& steps) {
  for (const Step& s : steps) s.prim.execute(stream, s.args);
}

void LayerPlan::sync_weights(dnnl::stream& stream, uint64_t version) {
  if (version == weights_version_) return;
  stage(stream, "weight reorders", [&] { run(stream, weight_sync_); });
  stream.wait();
  weights_version_ = version;
}

void LayerPlan::forward(dnnl::stream& stream, bool training, const SampleKeys& samples) {
  const ModelShape& m = model_.shape();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const LayerSteps& ls = layers_[i];
    stage(stream, ls.name + " fwd", [&] {
      if (m.layers[i].layer.kind == LayerKind::Dropout) {
        run(stream, dropout_.at(i).to_plain);
        stream.wait();
        dropout_forward(i, training, samples);
      } else if (const auto own = own_pool_.find(i); own != own_pool_.end()) {
        stream.wait();
        OwnPool& p = own->second;
        max_pool_forward(p.shape, data_of(p.in), data_of(out_[i]), p.arg.data());
      } else {
        run(stream, !training && !ls.infer.empty() ? ls.infer : ls.fwd);
      }
    });
  }
  stream.wait();
  last_forward_training_ = training;
}

void LayerPlan::backward(dnnl::stream& stream) {
  MB_CHECK(last_forward_training_, Error, "oneDNN plan: backward() needs a training forward() first");
  const ModelShape& m = model_.shape();
  for (std::size_t i = layers_.size(); i-- > 0;) {
    const LayerSteps& ls = layers_[i];
    if (ls.relu && !ls.relu_folded)
      stage(stream, ls.name + " relu mask", [&] {
        const float* a = data_of(out_[i]);
        float* g = data_of(d_out_[i]);
        const std::size_t count = out_[i].get_desc().get_size() / sizeof(float);
        for (std::size_t e = 0; e < count; ++e) g[e] = a[e] > 0.0f ? g[e] : 0.0f;
      });
    if (!ls.bwd_w.empty()) stage(stream, ls.name + " bwd-w", [&] { run(stream, ls.bwd_w); });
    if (const auto own = own_wgrad_.find(i); own != own_wgrad_.end())
      stage(stream, ls.name + " bwd-w", [&] {
        stream.wait();
        const LayerShape& l = m.layers[i];
        const ParamTensor& w = m.params[std::size_t(l.weight)];
        float* db = l.bias >= 0 ? grads_ + m.params[std::size_t(l.bias)].offset : nullptr;
        const OwnWgrad& o = own->second;
        const float* relu_out = o.relu_out ? data_of(o.relu_out) : nullptr;
        conv_weight_grad(o.shape, data_of(o.src), data_of(d_out_[i]), relu_out, grads_ + w.offset, db);
      });
    if (gradient_ready && m.layers[i].param_count > 0) {
      stream.wait();
      gradient_ready(i);
    }
    if (!m.layers[i].needs_input_grad) continue;
    stage(stream, ls.name + " bwd-d", [&] {
      if (m.layers[i].layer.kind == LayerKind::Dropout) {
        dropout_backward(i);
        run(stream, dropout_.at(i).from_plain);
      } else if (const auto own = own_pool_.find(i); own != own_pool_.end()) {
        const OwnPool& p = own->second;
        max_pool_backward_relu(p.shape, data_of(d_out_[i]), p.mask_by, p.arg.data(), data_of(d_out_[i - 1]));
      } else {
        run(stream, ls.bwd_d);
      }
    });
    stream.wait();
  }
  stage(stream, "gradient reorders", [&] { run(stream, grad_export_); });
  stream.wait();
}

std::string LayerPlan::describe() {
  std::string out = fmt::format("batch {}, per layer:", batch_);
  for (const LayerSteps& ls : layers_) {
    out += fmt::format(" [{}", ls.name);
    for (const std::string& s : ls.impl) out += " " + s;
    out += ls.impl.empty() ? " view]" : "]";
  }
  return out + fmt::format(" + {} weight and {} gradient reorders", weight_sync_.size(), grad_export_.size());
}

}  // namespace mb::onednn

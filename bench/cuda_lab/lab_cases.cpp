// The kernel lab's CPU half (see lab_cases.h).
#include "lab_cases.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "backends/reference/layers.h"
#include "model/init_params.h"
#include "model/cnn_spec.h"
#include "util/error.h"
#include "util/random.h"

namespace mb::lab {
namespace {

using namespace cnn;

constexpr CaseTolerance kExact{0, 0, "the same float operations as the reference: bit-identical"};
constexpr CaseTolerance kDoubleSum{1e-9, 1e-6, "a double sum in another order, rounded once to float"};
constexpr CaseTolerance kAdam{
    1e-7, 1e-6, "each operation rounded as the reference's (no FMA): bit-identical but for the host compiler"};
constexpr CaseTolerance kLibFp32{5e-4, 5e-3,
                                 "FP32 sums of up to 86,528 terms in the library's order against the reference's "
                                 "double ones (the engine tests' tolerance)"};
constexpr CaseTolerance kLibTf32{1e-2, 3e-2, "TF32 products (10-bit mantissas) against the reference's double ones"};
constexpr CaseTolerance kFused{
    2e-4, 2e-3,
    "the emulator's own functions (its sums in double); the device's FP32 partial sums and FMA contraction"};
constexpr CaseTolerance kStepFp32{5e-4, 5e-3,
                                  "a whole step's gradients, FP32 against double (the engine tests' tolerance)"};
constexpr CaseTolerance kStepTf32{3e-2, 5e-2, "a whole step's gradients in TF32 (the engine tests' tolerance)"};

// Glorot weights, then nonzero biases of both signs and conv1 channels 0-7 tied (zero weights,
// a positive bias): every pooling window there is a 4-way tie, the reference's tie rule.
std::vector<float> lab_params(uint64_t seed) {
  std::vector<float> p(kReferenceParams);
  init_params(ModelSpec{}, p, seed);
  for (const auto& t : param_tensors()) {
    if (t.rank != 1) continue;
    for (std::size_t i = 0; i < t.size; ++i) p[t.offset + i] = 0.02f * float(1 + i % 5) * (i % 3 == 0 ? -1.0f : 1.0f);
  }
  const auto& w1 = param_tensors()[kConv1W];
  for (std::size_t c = 0; c < 8; ++c) {
    std::fill_n(p.begin() + std::ptrdiff_t(w1.offset + c * 9), 9, 0.0f);
    p[param_tensors()[kConv1B].offset + c] = 0.05f;
  }
  return p;
}

const float* param(const std::vector<float>& p, ParamId id) { return p.data() + param_tensors()[id].offset; }

// p = maxpool2x2(relu(y + bias[c])), floor, argmax = the first maximum (kernels.h's contract).
void bias_relu_pool(const std::vector<float>& y, const float* bias, int n, int c, int h, int w, std::vector<float>& p,
                    std::vector<uint8_t>& arg) {
  const int oh = h / 2, ow = w / 2;
  p.assign(std::size_t(n) * c * oh * ow, 0.0f);
  arg.assign(p.size(), 0);
  for (int plane = 0; plane < n * c; ++plane)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const float* in = y.data() + std::size_t(plane) * h * w + (2 * oy) * w + 2 * ox;
        const float b = bias[plane % c];
        const float v[4] = {std::max(in[0] + b, 0.0f), std::max(in[1] + b, 0.0f), std::max(in[w] + b, 0.0f),
                            std::max(in[w + 1] + b, 0.0f)};
        int k = 0;
        for (int j = 1; j < 4; ++j)
          if (v[j] > v[k]) k = j;
        const std::size_t o = std::size_t(plane) * oh * ow + std::size_t(oy) * ow + ox;
        p[o] = v[k];
        arg[o] = uint8_t(k);
      }
}

// dy = dp at each window's argmax where p > 0, else 0; dbias = sum over images and positions (double).
void pool_relu_bias_backward(const std::vector<float>& dp, const std::vector<float>& p, const std::vector<uint8_t>& arg,
                             int n, int c, int h, int w, std::vector<float>& dy, std::vector<float>& dbias) {
  const int oh = h / 2, ow = w / 2;
  dy.assign(std::size_t(n) * c * h * w, 0.0f);
  std::vector<double> acc(std::size_t(c), 0.0);
  for (int plane = 0; plane < n * c; ++plane)
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) {
        const std::size_t o = std::size_t(plane) * oh * ow + std::size_t(oy) * ow + ox;
        if (!(p[o] > 0.0f)) continue;
        const int k = arg[o];
        dy[std::size_t(plane) * h * w + std::size_t(2 * oy + (k >> 1)) * w + 2 * ox + (k & 1)] = dp[o];
        acc[std::size_t(plane % c)] += dp[o];
      }
  dbias.assign(std::size_t(c), 0.0f);
  for (int i = 0; i < c; ++i) dbias[std::size_t(i)] = float(acc[std::size_t(i)]);
}

double conv_flops(int n, int cin, int cout, int side_out) { return 2.0 * n * cout * side_out * side_out * cin * 9; }

}  // namespace

const char* to_string(Group g) {
  switch (g) {
    case Group::OwnKernel: return "own kernel";
    case Group::Cudnn: return "cuDNN";
    case Group::Cublas: return "cuBLAS";
    case Group::Fused: return "fused";
    case Group::Step: return "train step";
  }
  return "?";
}

std::vector<int> lab_batches(bool quick) { return quick ? std::vector<int>{3, 64} : std::vector<int>{1, 3, 64, 128}; }

std::vector<CaseSpec> lab_cases(int n, Precision precision) {
  const double f = 4, u8 = 1;  // bytes per float, per byte
  const double x = double(n) * kImagePixels, c1 = double(n) * kConv1Out * kConv1Side * kConv1Side;
  const double p1 = double(n) * kConv1Out * kPool1Side * kPool1Side,
               c2 = double(n) * kConv2Out * kConv2Side * kConv2Side;
  const double p2 = double(n) * kFlat, h = double(n) * kReferenceHidden, lg = double(n) * kClasses;
  const double w1 = 288, w2 = 18432, fw1 = double(kFlat) * kReferenceHidden, fw2 = double(kReferenceHidden) * kClasses;
  const bool tf32 = precision == Precision::Tf32;
  const CaseTolerance lib = tf32 ? kLibTf32 : kLibFp32;
  std::vector<CaseSpec> c;
  auto add = [&](std::string name, Group g, CaseTolerance t, double flops, double bytes, bool tensor = false) {
    c.push_back(CaseSpec{std::move(name), g, t, flops, bytes, tensor});
  };
  // The cudnn path's own kernels (kernels.h).
  add("gather + normalise", Group::OwnKernel, kExact, x, x * (u8 + f) + n * 9.0);
  add("conv1 bias + ReLU + pool", Group::OwnKernel, kExact, c1 * 2, c1 * f + p1 * (f + u8));
  add("conv2 bias + ReLU + pool", Group::OwnKernel, kExact, c2 * 2, c2 * f + p2 * (f + u8));
  add("fc1 bias + ReLU", Group::OwnKernel, kExact, h * 2, 2 * h * f);
  add("softmax cross-entropy (train)", Group::OwnKernel, kDoubleSum, lg * 8, 2 * lg * f + n * 4.0);
  add("softmax cross-entropy (eval)", Group::OwnKernel, kDoubleSum, lg * 6, lg * f + n * 4.0);
  add("fc2 bias gradient", Group::OwnKernel, kDoubleSum, lg, lg * f);
  add("fc1 ReLU mask + bias gradient", Group::OwnKernel, kDoubleSum, h * 2, 3 * h * f);
  add("conv2 pool + ReLU + bias backward", Group::OwnKernel, kDoubleSum, c2, c2 * f + p2 * (2 * f + u8));
  add("conv1 pool + ReLU + bias backward", Group::OwnKernel, kDoubleSum, c1, c1 * f + p1 * (2 * f + u8));
  add("Adam (fused)", Group::OwnKernel, kAdam, double(kReferenceParams) * 12, double(kReferenceParams) * 7 * f);
  add("in-GPU all-reduce (3 buffers)", Group::OwnKernel, kExact, double(kReferenceParams) * 2, double(kReferenceParams) * 6 * f);
  // The library calls, with the algorithm the engine chose.
  add("cuDNN conv1 forward", Group::Cudnn, lib, conv_flops(n, 1, 32, 26), (x + w1 + c1) * f, tf32);
  add("cuDNN conv2 forward", Group::Cudnn, lib, conv_flops(n, 32, 64, 11), (p1 + w2 + c2) * f, tf32);
  add("cuDNN conv1 weight gradient", Group::Cudnn, lib, conv_flops(n, 1, 32, 26), (x + c1 + w1) * f, tf32);
  add("cuDNN conv2 weight gradient", Group::Cudnn, lib, conv_flops(n, 32, 64, 11), (p1 + c2 + w2) * f, tf32);
  add("cuDNN conv2 input gradient", Group::Cudnn, lib, conv_flops(n, 32, 64, 11), (c2 + w2 + p1) * f, tf32);
  add("cuBLAS fc1 forward", Group::Cublas, lib, 2.0 * n * kFlat * kReferenceHidden, (p2 + fw1 + h) * f, tf32);
  add("cuBLAS fc1 weight gradient", Group::Cublas, lib, 2.0 * n * kFlat * kReferenceHidden, (p2 + h + fw1) * f, tf32);
  add("cuBLAS fc1 input gradient", Group::Cublas, lib, 2.0 * n * kFlat * kReferenceHidden, (h + fw1 + p2) * f, tf32);
  add("cuBLAS fc2 forward", Group::Cublas, lib, 2.0 * n * kReferenceHidden * kClasses, (h + fw2 + lg) * f, tf32);
  add("cuBLAS fc2 weight gradient", Group::Cublas, lib, 2.0 * n * kReferenceHidden * kClasses, (h + lg + fw2) * f, tf32);
  add("cuBLAS fc2 input gradient", Group::Cublas, lib, 2.0 * n * kReferenceHidden * kClasses, (lg + fw2 + h) * f, tf32);
  // The fused path's kernels (fused_math.h), against the emulator. Forward FLOPs are the
  // pooled region's (row/column 10 of conv2 is never pooled); the backward ones count the
  // argmax-routed terms (a quarter of the dense formulation's).
  const double c2_pooled = conv_flops(n, 32, 64, 10);
  add(fused::fused_kernel_name(fused::FusedKernel::Conv1Fwd), Group::Fused, kFused, conv_flops(n, 1, 32, 26),
      x * u8 + p1 * (f + u8));
  add(fused::fused_kernel_name(fused::FusedKernel::Conv2Fwd), Group::Fused, kFused, c2_pooled, p1 * f + p2 * (f + u8));
  add(fused::fused_kernel_name(fused::FusedKernel::Fc1Fwd), Group::Fused, kFused, 2.0 * n * kFlat * kReferenceHidden,
      (p2 + fw1 + h) * f);
  add(fused::fused_kernel_name(fused::FusedKernel::Head), Group::Fused, kFused, 4.0 * n * kReferenceHidden * kClasses,
      (h * 2 + lg) * f);
  add(fused::fused_kernel_name(fused::FusedKernel::DenseBwd), Group::Fused, kFused, 4.0 * n * kFlat * kReferenceHidden,
      (p2 * 2 + fw1 * 2 + h * 2) * f);
  add(fused::fused_kernel_name(fused::FusedKernel::Conv2Wgrad), Group::Fused, kFused, c2_pooled / 4,
      (p1 + p2 + w2) * f + p2 * u8);
  add(fused::fused_kernel_name(fused::FusedKernel::Conv2Dgrad), Group::Fused, kFused, c2_pooled / 4,
      (p2 + w2 + 2 * p1) * f + p2 * u8);
  add(fused::fused_kernel_name(fused::FusedKernel::Conv1Wgrad), Group::Fused, kFused, conv_flops(n, 1, 32, 26) / 4,
      (p1 + w1) * f + p1 * u8 + x * u8);
  // Whole steps side by side (forward + backward + Adam, the engine's own graphs).
  const double step_flops = n * ModelSpec{}.train_flops_per_image();
  add("train step, cudnn path, " + std::string(to_string(precision)), Group::Step, tf32 ? kStepTf32 : kStepFp32, step_flops,
      (x + 3 * c1 + 3 * p1 + 3 * c2 + 3 * p2) * f, tf32);
  add("train step, fused path", Group::Step, kStepFp32, step_flops, (x + 3 * p1 + 3 * p2) * f);
  return c;
}

const CaseSpec& find_case(const std::vector<CaseSpec>& cases, const std::string& name) {
  for (const auto& c : cases)
    if (c.name == name) return c;
  throw Error(fmt::format("the kernel lab has no case '{}'", name));
}

CudnnStages make_cudnn_stages(int n, uint64_t seed) {
  MB_CHECK(n >= 1, Error, "lab batch {} < 1", n);
  CudnnStages s;
  s.n = n;
  s.grad_scale = 1.0f / 128;  // a share of the reference batch
  const int samples = std::max(n, 256);
  SplitMix64 rng(seed);
  s.data.name = "lab";
  s.data.count = samples;
  s.data.rows = s.data.cols = kImageSide;
  s.data.pixels.resize(std::size_t(samples) * kImagePixels);
  s.data.labels.resize(std::size_t(samples));
  for (auto& p : s.data.pixels) p = uint8_t(rng.next() % 256);
  for (auto& l : s.data.labels) l = uint8_t(rng.next() % kClasses);
  s.idx.resize(std::size_t(n));
  for (int i = 0; i < n; ++i) s.idx[std::size_t(i)] = int32_t((int64_t(i) * 97 + 13) % samples);
  s.params = lab_params(seed + 1);
  const auto& P = s.params;

  s.x.resize(std::size_t(n) * kImagePixels);
  s.labels.resize(std::size_t(n));
  std::vector<uint8_t> labels8(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    normalize_pixels(s.data.pixels.data() + std::size_t(s.idx[std::size_t(i)]) * kImagePixels, kImagePixels,
                     s.x.data() + std::size_t(i) * kImagePixels);
    labels8[std::size_t(i)] = s.data.labels[std::size_t(s.idx[std::size_t(i)])];
    s.labels[std::size_t(i)] = labels8[std::size_t(i)];
  }
  const std::vector<float> zeros(64, 0.0f);
  const ref::ConvShape conv1{n, 1, kImageSide, kImageSide, kConv1Out, 3},
      conv2{n, kConv1Out, kPool1Side, kPool1Side, kConv2Out, 3};
  s.c1.resize(std::size_t(n) * kConv1Out * kConv1Side * kConv1Side);
  ref::conv2d_forward(conv1, s.x.data(), param(P, kConv1W), zeros.data(), s.c1.data());
  bias_relu_pool(s.c1, param(P, kConv1B), n, kConv1Out, kConv1Side, kConv1Side, s.p1, s.a1);
  s.c2.resize(std::size_t(n) * kConv2Out * kConv2Side * kConv2Side);
  ref::conv2d_forward(conv2, s.p1.data(), param(P, kConv2W), zeros.data(), s.c2.data());
  bias_relu_pool(s.c2, param(P, kConv2B), n, kConv2Out, kConv2Side, kConv2Side, s.p2, s.a2);
  s.h_gemm.resize(std::size_t(n) * kReferenceHidden);
  ref::dense_forward({n, kFlat, kReferenceHidden}, s.p2.data(), param(P, kFc1W), zeros.data(), s.h_gemm.data());
  s.h = s.h_gemm;
  for (std::size_t i = 0; i < s.h.size(); ++i) s.h[i] = std::max(s.h[i] + param(P, kFc1B)[i % kReferenceHidden], 0.0f);
  s.logits.resize(std::size_t(n) * kClasses);
  ref::dense_forward({n, kReferenceHidden, kClasses}, s.h.data(), param(P, kFc2W), zeros.data(), s.logits.data());

  std::vector<float> z = s.logits;  // the softmax kernel adds the fc2 bias in float
  for (std::size_t i = 0; i < z.size(); ++i) z[i] += param(P, kFc2B)[i % kClasses];
  const BatchStats st = ref::softmax_xent_forward(z.data(), labels8.data(), n, kClasses);
  s.loss_sum = st.loss_sum;
  s.correct = double(st.correct);
  s.dlogits.resize(z.size());
  ref::softmax_xent_backward(z.data(), labels8.data(), n, kClasses, s.grad_scale, s.dlogits.data());

  s.g_fc2w.resize(std::size_t(kClasses) * kReferenceHidden);
  s.g_fc2b.resize(kClasses);
  s.dh_gemm.resize(std::size_t(n) * kReferenceHidden);
  ref::dense_backward({n, kReferenceHidden, kClasses}, s.h.data(), param(P, kFc2W), s.dlogits.data(), s.dh_gemm.data(),
                      s.g_fc2w.data(), s.g_fc2b.data());
  s.dh = s.dh_gemm;
  ref::relu_backward(s.h.data(), s.dh.data(), s.dh.data(), s.dh.size());
  s.g_fc1w.resize(std::size_t(kReferenceHidden) * kFlat);
  s.g_fc1b.resize(kReferenceHidden);
  s.dp2.resize(std::size_t(n) * kFlat);
  ref::dense_backward({n, kFlat, kReferenceHidden}, s.p2.data(), param(P, kFc1W), s.dh.data(), s.dp2.data(), s.g_fc1w.data(),
                      s.g_fc1b.data());
  pool_relu_bias_backward(s.dp2, s.p2, s.a2, n, kConv2Out, kConv2Side, kConv2Side, s.dc2, s.g_conv2b);
  std::vector<float> unused(64);
  s.g_conv2w.resize(18432);
  s.dp1.resize(s.p1.size());
  ref::conv2d_backward(conv2, s.p1.data(), param(P, kConv2W), s.dc2.data(), s.dp1.data(), s.g_conv2w.data(),
                       unused.data());
  pool_relu_bias_backward(s.dp1, s.p1, s.a1, n, kConv1Out, kConv1Side, kConv1Side, s.dc1, s.g_conv1b);
  s.g_conv1w.resize(288);
  ref::conv2d_backward(conv1, s.x.data(), param(P, kConv1W), s.dc1.data(), nullptr, s.g_conv1w.data(), unused.data());
  return s;
}

std::vector<float> CudnnStages::grads() const {
  std::vector<float> g(kReferenceParams);
  const std::vector<float>* parts[kNumParamTensors] = {&g_conv1w, &g_conv1b, &g_conv2w, &g_conv2b,
                                                       &g_fc1w,   &g_fc1b,   &g_fc2w,   &g_fc2b};
  for (int t = 0; t < kNumParamTensors; ++t) {
    MB_CHECK(parts[t]->size() == param_tensors()[std::size_t(t)].size, Error, "lab stage {} has {} values, not {}",
             param_tensors()[std::size_t(t)].name, parts[t]->size(), param_tensors()[std::size_t(t)].size);
    std::copy(parts[t]->begin(), parts[t]->end(), g.begin() + std::ptrdiff_t(param_tensors()[std::size_t(t)].offset));
  }
  return g;
}

FusedState::FusedState(const CudnnStages& s)
    : n(s.n),
      grad_scale(s.grad_scale),
      data(&s.data),
      step_idx(s.idx),
      params(s.params),
      grads(kReferenceParams, 0.0f),
      acts(s.n, kReferenceHidden) {}

FusedState::FusedState(const FusedState& o)
    : n(o.n),
      grad_scale(o.grad_scale),
      data(o.data),
      step_idx(o.step_idx),
      params(o.params),
      grads(o.grads),
      acts(o.acts) {
  stats[0] = o.stats[0];
  stats[1] = o.stats[1];
}

fused::FusedArgs FusedState::args() {
  return acts.args(n, step_idx.data(), grad_scale, stats, data->pixels.data(), data->labels.data(), params.data(),
                   grads.data(), true);
}

std::vector<NamedFloats> fused_float_outputs(fused::FusedKernel k, const FusedState& s) {
  using fused::FusedKernel;
  auto tensor = [&](ParamId id) {
    const auto& t = param_tensors()[id];
    return std::vector<float>(s.grads.begin() + std::ptrdiff_t(t.offset),
                              s.grads.begin() + std::ptrdiff_t(t.offset + t.size));
  };
  const auto& a = s.acts;
  const auto sized = [&](const std::vector<float>& v, std::size_t per) {
    return std::vector<float>(v.begin(), v.begin() + std::ptrdiff_t(per * std::size_t(s.n)));
  };
  switch (k) {
    case FusedKernel::Conv1Fwd: return {{"p1", sized(a.p1, kConv1Out * kPool1Side * kPool1Side)}};
    case FusedKernel::Conv2Fwd: return {{"p2", sized(a.p2, kFlat)}};
    case FusedKernel::Fc1Fwd: return {{"h", sized(a.h, kReferenceHidden)}};
    case FusedKernel::Head: {
      std::vector<float> stats = {float(s.stats[0]), float(s.stats[1])};
      return {{"dlogits", sized(a.dlogits, kClasses)}, {"dh", sized(a.dh, kReferenceHidden)}, {"loss, correct", stats}};
    }
    case FusedKernel::DenseBwd:
      return {{"fc1.weight grad", tensor(kFc1W)},
              {"fc1.bias grad", tensor(kFc1B)},
              {"fc2.weight grad", tensor(kFc2W)},
              {"fc2.bias grad", tensor(kFc2B)},
              {"g2", sized(a.g2, kFlat)}};
    case FusedKernel::Conv2Wgrad:
      return {{"conv2.weight grad", tensor(kConv2W)}, {"conv2.bias grad", tensor(kConv2B)}};
    case FusedKernel::Conv2Dgrad: return {{"g1", sized(a.g1, kConv1Out * kPool1Side * kPool1Side)}};
    case FusedKernel::Conv1Wgrad:
      return {{"conv1.weight grad", tensor(kConv1W)}, {"conv1.bias grad", tensor(kConv1B)}};
  }
  return {};
}

std::vector<std::span<const uint8_t>> fused_byte_outputs(fused::FusedKernel k, const FusedState& s) {
  const std::size_t n = std::size_t(s.n);
  if (k == fused::FusedKernel::Conv1Fwd) return {std::span<const uint8_t>(s.acts.a1.data(), n * kConv1Out * 169)};
  if (k == fused::FusedKernel::Conv2Fwd) return {std::span<const uint8_t>(s.acts.a2.data(), n * kFlat)};
  return {};
}

std::vector<std::span<const int32_t>> fused_int_outputs(fused::FusedKernel k, const FusedState& s) {
  if (k == fused::FusedKernel::Conv1Fwd) return {std::span<const int32_t>(s.acts.idx.data(), std::size_t(s.n))};
  return {};
}

Comparison compare(std::span<const float> got, std::span<const float> want, const CaseTolerance& tol) {
  Comparison c;
  if (got.size() != want.size()) return c;
  double scale = 0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  const double atol = tol.atol_scale * scale;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    const double allowed = atol + tol.rtol * std::fabs(double(want[i]));
    const double ratio = std::isnan(d) ? INFINITY : (d == 0 ? 0.0 : (allowed > 0 ? d / allowed : INFINITY));
    if (ratio > 1.0) ++c.mismatches;
    if (ratio > c.worst_ratio || (i == 0 && ratio == 0)) {
      c.worst_ratio = ratio;
      c.worst_index = i;
      c.got = got[i];
      c.want = want[i];
    }
  }
  c.passed = c.mismatches == 0;
  return c;
}

Comparison compare_bytes(std::span<const uint8_t> got, std::span<const uint8_t> want, std::size_t allowed) {
  Comparison c;
  if (got.size() != want.size()) return c;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && c.mismatches++ == 0) c.worst_index = i, c.got = got[i], c.want = want[i];
  c.passed = c.mismatches <= allowed;
  c.worst_ratio = c.mismatches == 0 ? 0 : double(c.mismatches) / double(std::max<std::size_t>(1, allowed));
  return c;
}

Comparison compare_ints(std::span<const int32_t> got, std::span<const int32_t> want) {
  Comparison c;
  if (got.size() != want.size()) return c;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && c.mismatches++ == 0) c.worst_index = i, c.got = got[i], c.want = want[i];
  c.passed = c.mismatches == 0;
  c.worst_ratio = c.passed ? 0 : INFINITY;
  return c;
}

void add_rates(Result& r, const CaseSpec& c, const Peak& peak) {
  if (r.time_us <= 0) return;
  const double s = r.time_us * 1e-6;
  r.gflops = c.flops / s / 1e9;
  r.gbs = c.bytes / s / 1e9;
  const double compute = r.gflops / 1e3 / (c.tensor_math ? peak.tf32_tflops : peak.fp32_tflops);
  r.peak_share = std::max(compute, r.gbs / peak.mem_gbs);
}

Result finish_case(const CaseSpec& spec, int n, const Checks& checks, double us, const Peak& peak) {
  Result r;
  r.name = spec.name;
  r.group = spec.group;
  r.n = n;
  r.validated = !checks.empty();
  r.passed = true;
  double worst = 0;
  for (const auto& [what, c] : checks) {
    if (!c.passed && r.passed) {
      r.passed = false;
      r.detail = fmt::format("{}: {} element(s) off, worst [{}] {:.9g} vs {:.9g} ({:.3g}x the tolerance: {})", what,
                             c.mismatches, c.worst_index, c.got, c.want, c.worst_ratio, spec.tol.why);
    }
    worst = std::max(worst, c.worst_ratio);
  }
  if (r.passed && r.validated) r.detail = fmt::format("{:.2g}", worst);
  r.time_us = us;
  add_rates(r, spec, peak);
  return r;
}

Result validate_then_time(const CaseSpec& spec, int n, const std::function<Checks()>& validate,
                          const std::function<double()>& time, const Peak& peak) {
  const Checks checks = validate();  // a statement of its own: complete before the first relaunch
  const double us = time();
  return finish_case(spec, n, checks, us, peak);
}

Result error_result(Group group, int n, const std::string& part, const std::string& what) {
  Result r;
  r.name = part + ": stopped by an error";
  r.group = group;
  r.n = n;
  r.validated = true;
  r.error = true;
  r.detail = what;
  return r;
}

PartSummary summarize_part(const std::string& name, const std::vector<Result>& results) {
  PartSummary s;
  s.name = name;
  for (const Result& r : results) {
    if (r.error) {
      ++s.errors;
    } else if (r.validated) {
      ++s.checks;
      s.failed += !r.passed;
    }
  }
  return s;
}

std::string format_summary(const PartSummary& s) {
  std::string line = fmt::format("{}: {} of {} checks passed", s.name, s.checks - s.failed, s.checks);
  if (s.errors > 0) line += fmt::format(", then {} error(s) stopped it (see the table)", s.errors);
  return line;
}

std::string format_table(const std::vector<Result>& results) {
  std::string out = fmt::format("{:<11} {:<56} {:>5} {:<5} {:>10} {:>10} {:>10} {:>9} {:>7}\n", "group", "case", "n",
                                "check", "worst", "us", "GFLOP/s", "GB/s", "% peak");
  for (const Result& r : results) {
    const std::string check = r.error ? "ERROR" : !r.validated ? "-" : (r.passed ? "PASS" : "FAIL");
    const std::string us = r.time_us >= 0 ? fmt::format("{:.2f}", r.time_us) : "-";
    out += fmt::format("{:<11} {:<56} {:>5} {:<5} {:>10} {:>10} {:>10.1f} {:>9.1f} {:>6.1f}%{}\n", to_string(r.group),
                       r.name, r.n, check, r.detail.size() <= 10 ? r.detail : "see below", us, r.gflops, r.gbs,
                       100.0 * r.peak_share, "");
    if (r.detail.size() > 10) out += "            " + r.detail + "\n";
  }
  return out;
}

std::string to_json(const std::vector<Result>& results) {
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char ch : s) {
      if (ch == '"' || ch == '\\') q += '\\';
      if (static_cast<unsigned char>(ch) >= 0x20) q += ch;
    }
    return q + "\"";
  };
  std::string out = "[\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    out += fmt::format(
        "  {{\"name\": {}, \"group\": {}, \"n\": {}, \"validated\": {}, \"passed\": {}, \"error\": {}, "
        "\"detail\": {}, \"time_us\": {}, \"gflops\": {}, \"gbs\": {}, \"peak_share\": {}}}{}\n",
        quoted(r.name), quoted(to_string(r.group)), r.n, r.validated ? "true" : "false", r.passed ? "true" : "false",
        r.error ? "true" : "false", quoted(r.detail), r.time_us, r.gflops, r.gbs, r.peak_share, i + 1 < results.size() ? "," : "");
  }
  return out + "]\n";
}

}  // namespace mb::lab

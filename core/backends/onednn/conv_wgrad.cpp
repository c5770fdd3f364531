// The few-input-channel weight gradient (see conv_wgrad.h): one Highway source for every
// instruction set. A vector holds consecutive output channels of one gradient block; for one
// input row of one tap row (ky) the K taps of that row are K accumulators, so every gradient
// load feeds K multiply-adds with the input broadcast from a zero-padded copy of the row.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/conv_wgrad.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>

#include "backends/onednn/conv_wgrad.h"
#include "backends/onednn/parallel.h"
#include "model/model_shape.h"
#include "util/error.h"

#ifndef MB_ONEDNN_CONV_WGRAD_SHARED
#define MB_ONEDNN_CONV_WGRAD_SHARED
namespace mb::onednn::wgrad {
constexpr int kMaxInChannels = 4;     // where oneDNN's own kernels are weak; more go to oneDNN
constexpr int kMaxKernel = 7;
constexpr int kMaxBlock = 16;
constexpr int kMaxRow = kMaxImageSide + kMaxKernel;   // the widest input row with its padding
constexpr int kMaxTaps = kMaxInChannels * kMaxKernel * kMaxKernel;
}  // namespace mb::onednn::wgrad
#endif

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace wgrad;

// The gradient vector at `at`: masked by the ReLU's derivative when the layer's output is given.
template <class D>
hn::Vec<D> gradient(D d, const float* g, const float* relu_out, std::size_t at) {
  const auto gv = hn::LoadU(d, g + at);
  return relu_out ? hn::IfThenElseZero(hn::Gt(hn::LoadU(d, relu_out + at), hn::Zero(d)), gv) : gv;
}

// One image's sums for the channel block `cb` (blocked by B), lanes [lane0, lane0 + Lanes):
// added to `total` (per tap, kMaxBlock lanes each) and `total_b`.
template <int B, int K>
void image_block(const ConvWgradShape& s, int n, int cb, int lane0, const float* x, const float* dy,
                 const float* relu_out, float* total, float* total_b) {
  const hn::CappedTag<float, B> d;
  using V = hn::Vec<decltype(d)>;
  const int blocks = (s.out_c + B - 1) / B;
  const std::size_t base = (std::size_t(n) * blocks + cb) * s.out_h * s.out_w * B + lane0;
  const float* g0 = dy + base;
  const float* a0 = relu_out ? relu_out + base : nullptr;
  float row[kMaxRow];
  for (int ic = 0; ic < s.in_c; ++ic)
    for (int ky = 0; ky < K; ++ky) {
      V acc[K];
      for (int kx = 0; kx < K; ++kx) acc[kx] = hn::Zero(d);
      for (int y = 0; y < s.out_h; ++y) {
        const int r = y + ky - s.pad;
        if (r < 0 || r >= s.in_h) continue;   // a row of padding: adds nothing
        const float* src = x + ((std::size_t(n) * s.in_c + ic) * s.in_h + r) * s.in_w;
        std::fill(row, row + s.pad, 0.0f);
        std::copy(src, src + s.in_w, row + s.pad);
        std::fill(row + s.pad + s.in_w, row + s.out_w + K - 1, 0.0f);
        const std::size_t g_row = std::size_t(y) * s.out_w * B;
        for (int xx = 0; xx < s.out_w; ++xx) {
          const V gv = gradient(d, g0, a0, g_row + std::size_t(xx) * B);
          for (int kx = 0; kx < K; ++kx) acc[kx] = hn::MulAdd(gv, hn::Set(d, row[xx + kx]), acc[kx]);
        }
      }
      for (int kx = 0; kx < K; ++kx) {
        float* t = total + ((ic * K + ky) * K + kx) * kMaxBlock + lane0;
        hn::StoreU(hn::Add(hn::LoadU(d, t), acc[kx]), d, t);
      }
    }
  V bias = hn::Zero(d);
  for (int p = 0; p < s.out_h * s.out_w; ++p) bias = hn::Add(bias, gradient(d, g0, a0, std::size_t(p) * B));
  hn::StoreU(hn::Add(hn::LoadU(d, total_b + lane0), bias), d, total_b + lane0);
}

// Channel blocks [cb_begin, cb_end) of a gradient blocked by B, every image in order; writes
// their rows of dw and db.
template <int B>
void blocks_of(const ConvWgradShape& s, int cb_begin, int cb_end, const float* x, const float* dy,
               const float* relu_out, float* dw, float* db) {
  const int lanes = int(hn::Lanes(hn::CappedTag<float, B>()));
  const int K = s.kernel, taps = s.in_c * K * K;
  for (int cb = cb_begin; cb < cb_end; ++cb) {
    float total[kMaxTaps * kMaxBlock] = {}, total_b[kMaxBlock] = {};
    for (int n = 0; n < s.batch; ++n)
      for (int lane0 = 0; lane0 < B; lane0 += lanes) switch (K) {
          case 1: image_block<B, 1>(s, n, cb, lane0, x, dy, relu_out, total, total_b); break;
          case 3: image_block<B, 3>(s, n, cb, lane0, x, dy, relu_out, total, total_b); break;
          case 5: image_block<B, 5>(s, n, cb, lane0, x, dy, relu_out, total, total_b); break;
          default: image_block<B, 7>(s, n, cb, lane0, x, dy, relu_out, total, total_b); break;
        }
    for (int lane = 0; lane < B; ++lane) {
      const int oc = cb * B + lane;
      if (oc >= s.out_c) break;   // the block's padding channels
      for (int t = 0; t < taps; ++t) dw[std::size_t(oc) * taps + t] = total[t * kMaxBlock + lane];
      if (db) db[oc] = total_b[lane];
    }
  }
}

void weight_grad_blocks(const ConvWgradShape& s, int cb_begin, int cb_end, const float* x, const float* dy,
                        const float* relu_out, float* dw, float* db) {
  if (s.block == 16) blocks_of<16>(s, cb_begin, cb_end, x, dy, relu_out, dw, db);
  else blocks_of<8>(s, cb_begin, cb_end, x, dy, relu_out, dw, db);
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(weight_grad_blocks);

bool conv_wgrad_supported(const ConvWgradShape& s) {
  using namespace wgrad;
  const bool odd_kernel = s.kernel >= 1 && s.kernel <= kMaxKernel && s.kernel % 2 == 1;
  return s.in_c >= 1 && s.in_c <= kMaxInChannels && odd_kernel && (s.block == 8 || s.block == 16) &&
         s.pad >= 0 && 2 * s.pad < s.kernel && s.in_w + 2 * s.pad <= kMaxRow && s.out_c >= 1 &&
         s.out_h == s.in_h + 2 * s.pad - s.kernel + 1 && s.out_w == s.in_w + 2 * s.pad - s.kernel + 1 &&
         s.out_h >= 1 && s.out_w >= 1 && s.batch >= 0;
}

void conv_weight_grad(const ConvWgradShape& s, const float* x, const float* dy, const float* relu_out, float* dw,
                      float* db) {
  MB_CHECK(conv_wgrad_supported(s), Error,
           "conv weight gradient: unsupported shape ({} x {}x{} in, {} x {}x{} out, kernel {}, pad {}, block {})",
           s.in_c, s.in_h, s.in_w, s.out_c, s.out_h, s.out_w, s.kernel, s.pad, s.block);
  const int blocks = (s.out_c + s.block - 1) / s.block;
  parallel_ranges(blocks, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(weight_grad_blocks)(s, begin, end, x, dy, relu_out, dw, db);
  });
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

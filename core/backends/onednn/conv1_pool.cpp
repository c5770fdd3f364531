// Fused conv1 + ReLU + max-pool and its weight gradient (see conv1_pool.h): one Highway source,
// which foreach_target.h compiles once per instruction set; a group of output channels (one
// vector: 16 lanes on AVX-512, 8 on AVX2, 4 on SSE4, 1 scalar) shares each broadcast pixel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/conv1_pool.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/onednn/conv1_pool.h"
#include "backends/onednn/parallel.h"
#include "backends/onednn/simd_target.h"
#include "model/cnn_spec.h"
#include "util/error.h"

#ifndef MB_ONEDNN_CONV1_POOL_SHARED
#define MB_ONEDNN_CONV1_POOL_SHARED
namespace mb::onednn::conv1 {

constexpr int kSide = cnn::kImageSide;    // 28
constexpr int kPooled = cnn::kPool1Side;  // 13
constexpr int kOut = cnn::kConv1Out;      // 32
constexpr int kWindows = kPooled * kPooled;
constexpr int kPartial = (kConv1Taps + 1) * kOut;   // one sample's tap and bias sums

static_assert(cnn::kConv1Side == 2 * kPooled, "conv1's output pools exactly (26 -> 13)");

// Index of window (ph, pw), lane 0, of channel block cb, sample n, in the blocked layout.
inline std::size_t pooled_index(int n, int cb, int ph, int pw, int block) {
  return ((std::size_t(n) * (kOut / block) + cb) * kWindows + ph * kPooled + pw) * block;
}

}  // namespace mb::onednn::conv1
#endif

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace conv1;

// One vector = `lanes` consecutive output channels of one channel block (never more than B,
// so a vector never straddles two blocks: B = 1 runs one channel per vector).
template <int B>
void forward_images(int n_begin, int n_end, const float* images, const float* taps, const float* bias,
                    float* pooled, uint8_t* arg) {
  const hn::CappedTag<float, B> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  using V = hn::Vec<decltype(d)>;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const V zero = hn::Zero(d);
  for (int n = n_begin; n < n_end; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    for (int c0 = 0; c0 < kOut; c0 += lanes) {
      V w[kConv1Taps];
      for (int t = 0; t < kConv1Taps; ++t) w[t] = hn::LoadU(d, taps + t * kOut + c0);
      const V b = hn::LoadU(d, bias + c0);
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const float* patch = img + 2 * ph * kSide + 2 * pw;   // the window's 4x4 input patch
          V s[4];
          for (int q = 0; q < 4; ++q) {
            const float* x = patch + (q / 2) * kSide + q % 2;
            V acc = b;
            for (int t = 0; t < kConv1Taps; ++t) acc = hn::MulAdd(w[t], hn::Set(d, x[(t / 3) * kSide + t % 3]), acc);
            s[q] = acc;
          }
          // First maximum in row-major window order (strict '>'); ReLU after the max is the
          // same value (and the same argmax wherever it matters: a non-positive max is masked).
          V m = s[0];
          auto k = hn::Zero(di);
          for (int q = 1; q < 4; ++q) {
            const auto gt = hn::Gt(s[q], m);
            m = hn::IfThenElse(gt, s[q], m);
            k = hn::IfThenElse(hn::RebindMask(di, gt), hn::Set(di, q), k);
          }
          const std::size_t o = pooled_index(n, c0 / B, ph, pw, B) + c0 % B;
          hn::StoreU(hn::Max(m, zero), d, pooled + o);
          hn::StoreU(hn::DemoteTo(d8, k), d8, arg + o);
        }
    }
  }
}

// Per-sample float sums (<= 169 terms per lane) into partials[n - n_begin]: 9 taps x 32
// channels, then 32 biases. The caller adds samples in double, in sample order.
template <int B>
void backward_images(int n_begin, int n_end, const float* images, const float* pooled, const float* d_pooled,
                     const uint8_t* arg, float* partials) {
  const hn::CappedTag<float, B> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  using V = hn::Vec<decltype(d)>;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const V zero = hn::Zero(d);
  for (int n = n_begin; n < n_end; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    float* out = partials + std::size_t(n - n_begin) * kPartial;
    for (int c0 = 0; c0 < kOut; c0 += lanes) {
      V acc[kConv1Taps];
      for (int t = 0; t < kConv1Taps; ++t) acc[t] = zero;
      V bacc = zero;
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const std::size_t o = pooled_index(n, c0 / B, ph, pw, B) + c0 % B;
          // The ReLU derivative: pooled > 0.
          const V g = hn::IfThenElseZero(hn::Gt(hn::LoadU(d, pooled + o), zero), hn::LoadU(d, d_pooled + o));
          const auto k = hn::PromoteTo(di, hn::LoadU(d8, arg + o));
          bacc = hn::Add(bacc, g);
          const float* patch = img + 2 * ph * kSide + 2 * pw;
          // Each lane takes its gradient from exactly one of the 4 window positions.
          for (int q = 0; q < 4; ++q) {
            const V gq = hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, q))), g);
            const float* x = patch + (q / 2) * kSide + q % 2;
            for (int t = 0; t < kConv1Taps; ++t)
              acc[t] = hn::MulAdd(gq, hn::Set(d, x[(t / 3) * kSide + t % 3]), acc[t]);
          }
        }
      for (int t = 0; t < kConv1Taps; ++t) hn::StoreU(acc[t], d, out + t * kOut + c0);
      hn::StoreU(bacc, d, out + kConv1Taps * kOut + c0);
    }
  }
}

void conv1_forward(int block, int n_begin, int n_end, const float* images, const float* taps, const float* bias,
                   float* pooled, uint8_t* arg) {
  if (block == 16) return forward_images<16>(n_begin, n_end, images, taps, bias, pooled, arg);
  if (block == 8) return forward_images<8>(n_begin, n_end, images, taps, bias, pooled, arg);
  forward_images<1>(n_begin, n_end, images, taps, bias, pooled, arg);
}

void conv1_backward(int block, int n_begin, int n_end, const float* images, const float* pooled,
                    const float* d_pooled, const uint8_t* arg, float* partials) {
  if (block == 16) return backward_images<16>(n_begin, n_end, images, pooled, d_pooled, arg, partials);
  if (block == 8) return backward_images<8>(n_begin, n_end, images, pooled, d_pooled, arg, partials);
  backward_images<1>(n_begin, n_end, images, pooled, d_pooled, arg, partials);
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(conv1_forward);
HWY_EXPORT(conv1_backward);

bool conv1_block_supported(int block) { return block == 16 || block == 8 || block == 1; }

void conv1_weights_to_taps(const float* oihw, float* taps) {
  for (int oc = 0; oc < conv1::kOut; ++oc)
    for (int t = 0; t < kConv1Taps; ++t) taps[t * conv1::kOut + oc] = oihw[oc * kConv1Taps + t];
}

void conv1_taps_to_weights(const double* taps, float* oihw) {
  for (int oc = 0; oc < conv1::kOut; ++oc)
    for (int t = 0; t < kConv1Taps; ++t) oihw[oc * kConv1Taps + t] = static_cast<float>(taps[t * conv1::kOut + oc]);
}

void conv1_relu_pool_forward(int n, const float* images, const float* taps, const float* bias, int block,
                             float* pooled, uint8_t* arg) {
  MB_CHECK(conv1_block_supported(block), Error, "conv1: unsupported channel block {}", block);
  parallel_ranges(n, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(conv1_forward)(block, begin, end, images, taps, bias, pooled, arg);
  });
}

void conv1_relu_pool_backward(int n, const float* images, const float* pooled, const float* d_pooled,
                              const uint8_t* arg, int block, double* d_taps, double* d_bias) {
  MB_CHECK(conv1_block_supported(block), Error, "conv1: unsupported channel block {}", block);
  // Per-sample sums first, then one fixed-order double sum: the result does not depend on
  // how many threads split the batch.
  // (The buffer belongs to the calling replica thread; the pointer is what the OpenMP
  // threads share: naming the thread_local inside the lambda would give each its own.)
  thread_local std::vector<float> buffer;
  buffer.resize(std::size_t(std::max(n, 1)) * conv1::kPartial);
  float* const partials = buffer.data();
  parallel_ranges(n, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(conv1_backward)(block, begin, end, images, pooled, d_pooled, arg,
                                         partials + std::size_t(begin) * conv1::kPartial);
  });
  std::memset(d_taps, 0, sizeof(double) * kConv1Taps * conv1::kOut);
  std::memset(d_bias, 0, sizeof(double) * conv1::kOut);
  for (int s = 0; s < n; ++s) {
    const float* p = partials + std::size_t(s) * conv1::kPartial;
    for (int i = 0; i < kConv1Taps * conv1::kOut; ++i) d_taps[i] += p[i];
    for (int c = 0; c < conv1::kOut; ++c) d_bias[c] += p[kConv1Taps * conv1::kOut + c];
  }
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

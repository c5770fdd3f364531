// Fused conv1 + ReLU + max-pool and its weight gradient (see conv1_pool.h): a portable
// template for any channel block and an AVX-512 version of the nChw16c case, where one
// window's 16 output channels are one register and each input pixel one broadcast.
#include "backends/onednn/conv1_pool.h"

#include <cstddef>
#include <cstring>

#include "model/cnn_spec.h"
#include "util/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* idiom.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define MB_CONV1_AVX512 1
#endif

namespace mb::onednn {
namespace {

constexpr int kSide = cnn::kImageSide;    // 28
constexpr int kPooled = cnn::kPool1Side;  // 13
constexpr int kOut = cnn::kConv1Out;      // 32
constexpr int kWindows = kPooled * kPooled;

static_assert(cnn::kConv1Side == 2 * kPooled, "conv1's output pools exactly (26 -> 13)");

// Index of window (ph, pw), lane 0, of channel block cb, sample n, in the blocked layout.
inline std::size_t pooled_index(int n, int cb, int ph, int pw, int block) {
  return ((std::size_t(n) * (kOut / block) + cb) * kWindows + ph * kPooled + pw) * block;
}

template <int B>
void forward_generic(int n_images, const float* images, const float* taps, const float* bias, float* pooled,
                     uint8_t* arg) {
  for (int n = 0; n < n_images; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    for (int cb = 0; cb < kOut / B; ++cb)
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const float* patch = img + 2 * ph * kSide + 2 * pw;   // the window's 4x4 input patch
          const std::size_t o = pooled_index(n, cb, ph, pw, B);
          for (int j = 0; j < B; ++j) {
            const int oc = cb * B + j;
            float s[4];
            for (int d = 0; d < 4; ++d) {
              const float* x = patch + (d / 2) * kSide + d % 2;
              float acc = bias[oc];
              for (int t = 0; t < kConv1Taps; ++t) acc += taps[t * kOut + oc] * x[(t / 3) * kSide + t % 3];
              s[d] = acc;
            }
            // First maximum in row-major window order; ReLU after the max is the same value
            // (and the same argmax wherever it matters: a non-positive max is masked anyway).
            int k = 0;
            for (int d = 1; d < 4; ++d)
              if (s[d] > s[k]) k = d;
            pooled[o + j] = s[k] > 0.0f ? s[k] : 0.0f;
            arg[o + j] = static_cast<uint8_t>(k);
          }
        }
  }
}

template <int B>
void backward_generic(int n_images, const float* images, const float* pooled, const float* d_pooled,
                      const uint8_t* arg, double* d_taps, double* d_bias) {
  for (int n = 0; n < n_images; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    // Per-sample float sums (<= 169 terms each), then double across samples.
    float acc[kConv1Taps][kOut] = {}, bacc[kOut] = {};
    for (int cb = 0; cb < kOut / B; ++cb)
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const std::size_t o = pooled_index(n, cb, ph, pw, B);
          for (int j = 0; j < B; ++j) {
            if (!(pooled[o + j] > 0.0f)) continue;   // ReLU derivative
            const int oc = cb * B + j, d = arg[o + j];
            const float g = d_pooled[o + j];
            const float* x = img + (2 * ph + d / 2) * kSide + 2 * pw + d % 2;
            bacc[oc] += g;
            for (int t = 0; t < kConv1Taps; ++t) acc[t][oc] += g * x[(t / 3) * kSide + t % 3];
          }
        }
    for (int oc = 0; oc < kOut; ++oc) {
      d_bias[oc] += bacc[oc];
      for (int t = 0; t < kConv1Taps; ++t) d_taps[t * kOut + oc] += acc[t][oc];
    }
  }
}

#ifdef MB_CONV1_AVX512
__attribute__((target("avx512f"))) void forward_avx512(int n_images, const float* images, const float* taps,
                                                       const float* bias, float* pooled, uint8_t* arg) {
  constexpr int B = 16;
  const __m512 zero = _mm512_setzero_ps();
  for (int n = 0; n < n_images; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    for (int cb = 0; cb < kOut / B; ++cb) {
      __m512 w[kConv1Taps];
      for (int t = 0; t < kConv1Taps; ++t) w[t] = _mm512_loadu_ps(taps + t * kOut + cb * B);
      const __m512 b = _mm512_loadu_ps(bias + cb * B);
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const float* patch = img + 2 * ph * kSide + 2 * pw;
          __m512 s[4];
          for (int d = 0; d < 4; ++d) {
            const float* x = patch + (d / 2) * kSide + d % 2;
            __m512 acc = b;
            for (int t = 0; t < kConv1Taps; ++t)
              acc = _mm512_fmadd_ps(w[t], _mm512_set1_ps(x[(t / 3) * kSide + t % 3]), acc);
            s[d] = acc;
          }
          __m512 m = s[0];
          __m512i k = _mm512_setzero_si512();
          for (int d = 1; d < 4; ++d) {
            const __mmask16 gt = _mm512_cmp_ps_mask(s[d], m, _CMP_GT_OQ);
            m = _mm512_mask_mov_ps(m, gt, s[d]);
            k = _mm512_mask_mov_epi32(k, gt, _mm512_set1_epi32(d));
          }
          const std::size_t o = pooled_index(n, cb, ph, pw, B);
          _mm512_storeu_ps(pooled + o, _mm512_max_ps(m, zero));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(arg + o), _mm512_cvtepi32_epi8(k));
        }
    }
  }
}

__attribute__((target("avx512f"))) void backward_avx512(int n_images, const float* images, const float* pooled,
                                                        const float* d_pooled, const uint8_t* arg, double* d_taps,
                                                        double* d_bias) {
  constexpr int B = 16;
  const __m512 zero = _mm512_setzero_ps();
  alignas(64) float lanes[kConv1Taps + 1][B];
  for (int n = 0; n < n_images; ++n) {
    const float* img = images + std::size_t(n) * kSide * kSide;
    for (int cb = 0; cb < kOut / B; ++cb) {
      // Per-sample float sums (<= 169 terms each), then double across samples.
      __m512 acc[kConv1Taps], bacc = zero;
      for (int t = 0; t < kConv1Taps; ++t) acc[t] = zero;
      for (int ph = 0; ph < kPooled; ++ph)
        for (int pw = 0; pw < kPooled; ++pw) {
          const std::size_t o = pooled_index(n, cb, ph, pw, B);
          const __m512 g = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(pooled + o), zero, _CMP_GT_OQ),
                                               _mm512_loadu_ps(d_pooled + o));
          const __m512i k = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(arg + o)));
          bacc = _mm512_add_ps(bacc, g);
          const float* patch = img + 2 * ph * kSide + 2 * pw;
          // Each lane takes its gradient from exactly one of the 4 window positions.
          for (int d = 0; d < 4; ++d) {
            const __m512 gd = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, _mm512_set1_epi32(d)), g);
            const float* x = patch + (d / 2) * kSide + d % 2;
            for (int t = 0; t < kConv1Taps; ++t)
              acc[t] = _mm512_fmadd_ps(gd, _mm512_set1_ps(x[(t / 3) * kSide + t % 3]), acc[t]);
          }
        }
      for (int t = 0; t < kConv1Taps; ++t) _mm512_store_ps(lanes[t], acc[t]);
      _mm512_store_ps(lanes[kConv1Taps], bacc);
      for (int j = 0; j < B; ++j) {
        for (int t = 0; t < kConv1Taps; ++t) d_taps[t * kOut + cb * B + j] += lanes[t][j];
        d_bias[cb * B + j] += lanes[kConv1Taps][j];
      }
    }
  }
}
#endif

}  // namespace

bool conv1_block_supported(int block) { return block == 16 || block == 8 || block == 1; }

void conv1_weights_to_taps(const float* oihw, float* taps) {
  for (int oc = 0; oc < kOut; ++oc)
    for (int t = 0; t < kConv1Taps; ++t) taps[t * kOut + oc] = oihw[oc * kConv1Taps + t];
}

void conv1_taps_to_weights(const double* taps, float* oihw) {
  for (int oc = 0; oc < kOut; ++oc)
    for (int t = 0; t < kConv1Taps; ++t) oihw[oc * kConv1Taps + t] = static_cast<float>(taps[t * kOut + oc]);
}

void conv1_relu_pool_forward(int n, const float* images, const float* taps, const float* bias, int block,
                             float* pooled, uint8_t* arg, Simd simd) {
  MB_CHECK(conv1_block_supported(block), Error, "conv1: unsupported channel block {}", block);
  (void)simd;
#ifdef MB_CONV1_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && simd == Simd::Auto && block == 16) return forward_avx512(n, images, taps, bias, pooled, arg);
#endif
  if (block == 16) return forward_generic<16>(n, images, taps, bias, pooled, arg);
  if (block == 8) return forward_generic<8>(n, images, taps, bias, pooled, arg);
  forward_generic<1>(n, images, taps, bias, pooled, arg);
}

void conv1_relu_pool_backward(int n, const float* images, const float* pooled, const float* d_pooled,
                              const uint8_t* arg, int block, double* d_taps, double* d_bias, Simd simd) {
  MB_CHECK(conv1_block_supported(block), Error, "conv1: unsupported channel block {}", block);
  (void)simd;
  std::memset(d_taps, 0, sizeof(double) * kConv1Taps * kOut);
  std::memset(d_bias, 0, sizeof(double) * kOut);
#ifdef MB_CONV1_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && simd == Simd::Auto && block == 16)
    return backward_avx512(n, images, pooled, d_pooled, arg, d_taps, d_bias);
#endif
  if (block == 16) return backward_generic<16>(n, images, pooled, d_pooled, arg, d_taps, d_bias);
  if (block == 8) return backward_generic<8>(n, images, pooled, d_pooled, arg, d_taps, d_bias);
  backward_generic<1>(n, images, pooled, d_pooled, arg, d_taps, d_bias);
}

}  // namespace mb::onednn

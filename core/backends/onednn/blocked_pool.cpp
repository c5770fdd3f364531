// Max-pool forward/backward loops for channel-blocked layouts (see blocked_pool.h): a
// portable template for any block, and AVX-512 versions of the nChw16c case (one channel
// block = one register) that GCC does not manage to vectorise from the template.
#include "backends/onednn/blocked_pool.h"

#include <cstddef>

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* idiom.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define MB_POOL_AVX512 1
#endif

#include "util/error.h"

namespace mb::onednn {
namespace {

template <int Bo>
inline std::size_t out_index(const PoolShape& s, int n, int c, int oh, int ow) {
  const int cb = c / Bo, cl = c % Bo;
  return ((((std::size_t(n) * (s.channels / Bo) + cb) * s.out_side + oh) * s.out_side + ow) * Bo) + cl;
}

// The argmax bytes are stored per window and input-block lane: (window index) * Bi + lane.
inline std::size_t arg_index(const PoolShape& s, int n, int cb, int blocks, int oh, int ow, int bi) {
  return (((std::size_t(n) * blocks + cb) * s.out_side + oh) * s.out_side + ow) * bi;
}

template <int Bi, int Bo>
void forward_impl(const PoolShape& s, const float* in, float* out, uint8_t* arg) {
  const int side = s.in_side, blocks = s.channels / Bi;
  for (int n = 0; n < s.batch; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      const float* plane = in + (std::size_t(n) * blocks + cb) * side * side * Bi;
      for (int oh = 0; oh < s.out_side; ++oh)
        for (int ow = 0; ow < s.out_side; ++ow) {
          const float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * Bi;
          const float* r1 = r0 + side * Bi;
          const std::size_t o = out_index<Bo>(s, n, cb * Bi, oh, ow);
          uint8_t* a = arg + arg_index(s, n, cb, blocks, oh, ow, Bi);
          for (int j = 0; j < Bi; ++j) {
            // Strict '>' in row-major window order: the first maximum wins, as in PyTorch.
            float m = r0[j];
            uint8_t k = 0;
            k = r0[Bi + j] > m ? 1 : k;
            m = r0[Bi + j] > m ? r0[Bi + j] : m;
            k = r1[j] > m ? 2 : k;
            m = r1[j] > m ? r1[j] : m;
            k = r1[Bi + j] > m ? 3 : k;
            m = r1[Bi + j] > m ? r1[Bi + j] : m;
            // Within one input block the output channels are consecutive (Bo >= Bi) or
            // one out-plane apart (Bo == 1).
            const std::size_t oj = Bo == 1 ? o + std::size_t(j) * s.out_side * s.out_side : o + j;
            out[oj] = m;
            a[j] = k;
          }
        }
    }
}

template <int Bi, int Bo>
void backward_impl(const PoolShape& s, const float* d_out, const float* out, const uint8_t* arg, float* d_in) {
  const int side = s.in_side, blocks = s.channels / Bi;
  const bool odd = side % 2 != 0;
  for (int n = 0; n < s.batch; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      float* plane = d_in + (std::size_t(n) * blocks + cb) * side * side * Bi;
      for (int oh = 0; oh < s.out_side; ++oh) {
        for (int ow = 0; ow < s.out_side; ++ow) {
          float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * Bi;
          float* r1 = r0 + side * Bi;
          const std::size_t o = out_index<Bo>(s, n, cb * Bi, oh, ow);
          const uint8_t* a = arg + arg_index(s, n, cb, blocks, oh, ow, Bi);
          for (int j = 0; j < Bi; ++j) {
            const std::size_t oj = Bo == 1 ? o + std::size_t(j) * s.out_side * s.out_side : o + j;
            const float g = out[oj] > 0.0f ? d_out[oj] : 0.0f;
            const uint8_t k = a[j];
            r0[j] = k == 0 ? g : 0.0f;
            r0[Bi + j] = k == 1 ? g : 0.0f;
            r1[j] = k == 2 ? g : 0.0f;
            r1[Bi + j] = k == 3 ? g : 0.0f;
          }
        }
        if (odd) {  // the column the floor drops
          for (int r = 2 * oh; r < 2 * oh + 2; ++r) {
            float* p = plane + (std::size_t(r) * side + side - 1) * Bi;
            for (int j = 0; j < Bi; ++j) p[j] = 0.0f;
          }
        }
      }
      if (odd) {  // the row the floor drops
        float* p = plane + std::size_t(side - 1) * side * Bi;
        for (int j = 0; j < side * Bi; ++j) p[j] = 0.0f;
      }
    }
}

#ifdef MB_POOL_AVX512
// nChw16c input: each window's 16 channels are one zmm per tap. Output either nChw16c
// (a plain store) or plain NCHW (a scatter with the out-plane stride; the loop is bound by
// reading the conv output, not by the scatter).
template <int Bo>
__attribute__((target("avx512f"))) void forward_avx512(const PoolShape& s, const float* in, float* out,
                                                       uint8_t* arg) {
  constexpr int B = 16;
  const int side = s.in_side, blocks = s.channels / B;
  const __m512i lanes = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(s.out_side * s.out_side));
  for (int n = 0; n < s.batch; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      const float* plane = in + (std::size_t(n) * blocks + cb) * side * side * B;
      for (int oh = 0; oh < s.out_side; ++oh)
        for (int ow = 0; ow < s.out_side; ++ow) {
          const float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * B;
          const float* r1 = r0 + side * B;
          // Strict '>' (ordered) in row-major window order: the first maximum wins.
          __m512 m = _mm512_loadu_ps(r0);
          __m512i k = _mm512_setzero_si512();
          __m512 v = _mm512_loadu_ps(r0 + B);
          __mmask16 gt = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ);
          m = _mm512_mask_mov_ps(m, gt, v);
          k = _mm512_mask_mov_epi32(k, gt, _mm512_set1_epi32(1));
          v = _mm512_loadu_ps(r1);
          gt = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ);
          m = _mm512_mask_mov_ps(m, gt, v);
          k = _mm512_mask_mov_epi32(k, gt, _mm512_set1_epi32(2));
          v = _mm512_loadu_ps(r1 + B);
          gt = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ);
          m = _mm512_mask_mov_ps(m, gt, v);
          k = _mm512_mask_mov_epi32(k, gt, _mm512_set1_epi32(3));
          const std::size_t o = out_index<Bo>(s, n, cb * B, oh, ow);
          if constexpr (Bo == B)
            _mm512_storeu_ps(out + o, m);
          else
            _mm512_i32scatter_ps(out + o, lanes, m, 4);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(arg + arg_index(s, n, cb, blocks, oh, ow, B)),
                           _mm512_cvtepi32_epi8(k));
        }
    }
}

template <int Bo>
__attribute__((target("avx512f"))) void backward_avx512(const PoolShape& s, const float* d_out, const float* out,
                                                        const uint8_t* arg, float* d_in) {
  constexpr int B = 16;
  const int side = s.in_side, blocks = s.channels / B;
  const bool odd = side % 2 != 0;
  const __m512i lanes = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(s.out_side * s.out_side));
  const __m512 zero = _mm512_setzero_ps();
  const __m512i k0 = _mm512_setzero_si512(), k1 = _mm512_set1_epi32(1), k2 = _mm512_set1_epi32(2),
                k3 = _mm512_set1_epi32(3);
  for (int n = 0; n < s.batch; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      float* plane = d_in + (std::size_t(n) * blocks + cb) * side * side * B;
      for (int oh = 0; oh < s.out_side; ++oh) {
        for (int ow = 0; ow < s.out_side; ++ow) {
          float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * B;
          float* r1 = r0 + side * B;
          const std::size_t o = out_index<Bo>(s, n, cb * B, oh, ow);
          __m512 p, d;
          if constexpr (Bo == B) {
            p = _mm512_loadu_ps(out + o);
            d = _mm512_loadu_ps(d_out + o);
          } else {
            p = _mm512_i32gather_ps(lanes, out + o, 4);
            d = _mm512_i32gather_ps(lanes, d_out + o, 4);
          }
          const __m512 g = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(p, zero, _CMP_GT_OQ), d);
          const __m512i k = _mm512_cvtepu8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(arg + arg_index(s, n, cb, blocks, oh, ow, B))));
          _mm512_storeu_ps(r0, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, k0), g));
          _mm512_storeu_ps(r0 + B, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, k1), g));
          _mm512_storeu_ps(r1, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, k2), g));
          _mm512_storeu_ps(r1 + B, _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(k, k3), g));
        }
        if (odd) {  // the column the floor drops
          _mm512_storeu_ps(plane + (std::size_t(2 * oh) * side + side - 1) * B, zero);
          _mm512_storeu_ps(plane + (std::size_t(2 * oh + 1) * side + side - 1) * B, zero);
        }
      }
      if (odd) {  // the row the floor drops
        float* p = plane + std::size_t(side - 1) * side * B;
        for (int w = 0; w < side; ++w) _mm512_storeu_ps(p + w * B, zero);
      }
    }
}
#endif

using ForwardFn = void (*)(const PoolShape&, const float*, float*, uint8_t*);
using BackwardFn = void (*)(const PoolShape&, const float*, const float*, const uint8_t*, float*);

template <int Bi>
void pick(int out_block, ForwardFn& f, BackwardFn& b) {
  if (out_block == Bi) {
    f = forward_impl<Bi, Bi>;
    b = backward_impl<Bi, Bi>;
  } else if (out_block == 1) {
    f = forward_impl<Bi, 1>;
    b = backward_impl<Bi, 1>;
  }
}

void dispatch(const PoolShape& s, Simd simd, ForwardFn& f, BackwardFn& b) {
  f = nullptr;
  b = nullptr;
  (void)simd;
  if (s.in_block == 16) pick<16>(s.out_block, f, b);
#ifdef MB_POOL_AVX512
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  const bool avx512 = has_avx512 && simd == Simd::Auto;
  if (avx512 && s.in_block == 16 && s.out_block == 16) {
    f = forward_avx512<16>;
    b = backward_avx512<16>;
  } else if (avx512 && s.in_block == 16 && s.out_block == 1) {
    f = forward_avx512<1>;
    b = backward_avx512<1>;
  }
#endif
  if (s.in_block == 8) pick<8>(s.out_block, f, b);
  if (s.in_block == 1) pick<1>(s.out_block, f, b);
  MB_CHECK(f && b && s.channels % s.in_block == 0 && s.channels % s.out_block == 0 && s.out_side == s.in_side / 2,
           Error, "max-pool: unsupported layout (in block {}, out block {}, {} channels, side {} -> {})",
           s.in_block, s.out_block, s.channels, s.in_side, s.out_side);
}

}  // namespace

bool pool_block_supported(int block) { return block == 1 || block == 8 || block == 16; }

void max_pool_forward(const PoolShape& s, const float* in, float* out, uint8_t* arg, Simd simd) {
  ForwardFn f;
  BackwardFn b;
  dispatch(s, simd, f, b);
  f(s, in, out, arg);
}

void max_pool_backward_relu(const PoolShape& s, const float* d_out, const float* out, const uint8_t* arg,
                            float* d_in, Simd simd) {
  ForwardFn f;
  BackwardFn b;
  dispatch(s, simd, f, b);
  b(s, d_out, out, arg, d_in);
}

}  // namespace mb::onednn

// Winograd F(4x4, 3x3) for conv2 (see winograd_conv2.h), one Highway source compiled for every
// instruction set. Transforms (Lavin & Gray, points 0, +-1, +-2, infinity):
//   forward  Y  = A^T [ (G g G^T) . (B^T d B) ] A
//   weights  dg = G^T [ sum over tiles (A dY A^T) . (B^T d B) ] G
//   data     the forward pass over dY padded by 2, with the kernel rotated by 180 degrees.
// Vectors run over channels (the 16 of a block, or 8 or 4 of them), so each transform is the
// same few adds on whole vectors and each GEMM row is one tile.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/winograd_conv2.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "backends/onednn/parallel.h"
#include "backends/onednn/simd_target.h"
#include "backends/onednn/winograd_conv2.h"
#include "model/cnn_spec.h"

#ifndef MB_ONEDNN_WINOGRAD_CONV2_SHARED
#define MB_ONEDNN_WINOGRAD_CONV2_SHARED
namespace mb::onednn::wino {

constexpr int kIn = cnn::kConv1Out;        // 32 input channels
constexpr int kOut = cnn::kConv2Out;       // 64 output channels
constexpr int kInSide = cnn::kPool1Side;   // 13
constexpr int kOutSide = cnn::kConv2Side;  // 11
constexpr int kB = kWinogradBlock;
constexpr int kPoints = 36;                // 6 x 6 transform points
constexpr int kFwdTiles = 3;               // 4x4 output tiles per side of conv2's 11x11 output
constexpr int kBwdTiles = 4;               // ... of the data gradient's 13x13
// Images per chunk: tiles per chunk a multiple of the GEMM's 6 (or 12) rows, buffers ~0.5 MB.
constexpr int kFwdChunk = 4;    // 36 tiles
constexpr int kBwdChunk = 3;    // 48 tiles

static_assert(kOutSide == kInSide - 2 && (kFwdTiles - 1) * 4 < kOutSide && kFwdTiles * 4 >= kOutSide);
static_assert((kBwdTiles - 1) * 4 < kInSide && kBwdTiles * 4 >= kInSide);

// Element (n, c, h, w) of an n x channels x side x side nChw16c tensor.
inline std::size_t at(int n, int channels, int side, int c, int h, int w) {
  return ((((std::size_t(n) * (channels / kB) + c / kB) * side + h) * side + w) * kB) + c % kB;
}

// Per-thread chunk buffers, grown on first use.
struct Scratch {
  std::vector<float> v, m, dw;
};
inline Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace mb::onednn::wino
#endif

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace wino;

using D = hn::CappedTag<float, kB>;   // a vector never straddles two channel blocks
using V = hn::Vec<D>;
constexpr int kLanes = static_cast<int>(hn::MaxLanes(D()));

// ---- the 1-D transforms, on vectors ----
// B^T x (6 -> 6).
HWY_INLINE void bt6(const V (&x)[6], V (&o)[6]) {
  const D d;
  const V c4 = hn::Set(d, 4.0f), c5 = hn::Set(d, 5.0f), c2 = hn::Set(d, 2.0f);
  o[0] = hn::MulAdd(c4, x[0], hn::NegMulAdd(c5, x[2], x[4]));
  o[1] = hn::NegMulAdd(c4, hn::Add(x[1], x[2]), hn::Add(x[3], x[4]));
  o[2] = hn::MulAdd(c4, hn::Sub(x[1], x[2]), hn::Sub(x[4], x[3]));
  o[3] = hn::MulAdd(c2, hn::Sub(x[3], x[1]), hn::Sub(x[4], x[2]));
  o[4] = hn::MulAdd(c2, hn::Sub(x[1], x[3]), hn::Sub(x[4], x[2]));
  o[5] = hn::MulAdd(c4, x[1], hn::NegMulAdd(c5, x[3], x[5]));
}

// A^T m (6 -> 4).
HWY_INLINE void at4(const V (&m)[6], V (&o)[4]) {
  const D d;
  const V c2 = hn::Set(d, 2.0f), c4 = hn::Set(d, 4.0f), c8 = hn::Set(d, 8.0f);
  const V s12 = hn::Add(m[1], m[2]), d12 = hn::Sub(m[1], m[2]);
  const V s34 = hn::Add(m[3], m[4]), d34 = hn::Sub(m[3], m[4]);
  o[0] = hn::Add(hn::Add(m[0], s12), s34);
  o[1] = hn::MulAdd(c2, d34, d12);
  o[2] = hn::MulAdd(c4, s34, s12);
  o[3] = hn::Add(hn::MulAdd(c8, d34, d12), m[5]);
}

// A y (4 -> 6): the transpose of at4, for the output gradient of the weight pass.
HWY_INLINE void a6(const V (&y)[4], V (&o)[6]) {
  const D d;
  const V c2 = hn::Set(d, 2.0f), c4 = hn::Set(d, 4.0f), c8 = hn::Set(d, 8.0f);
  const V s02 = hn::Add(y[0], y[2]), s13 = hn::Add(y[1], y[3]);
  const V e = hn::MulAdd(c4, y[2], y[0]), f = hn::MulAdd(c8, y[3], hn::Mul(c2, y[1]));
  o[0] = y[0];
  o[1] = hn::Add(s02, s13);
  o[2] = hn::Sub(s02, s13);
  o[3] = hn::Add(e, f);
  o[4] = hn::Sub(e, f);
  o[5] = y[3];
}

// ---- GEMM: C[rows x cols] (+)= A[rows x k] B[k x cols], element A(r, kk) at a[r*a_rs + kk*a_ks] ----
// An MR x NV-vector block of C lives in registers across the whole k loop.
template <int MR, int NV>
HWY_INLINE void micro(int k, const float* a, int a_rs, int a_ks, const float* b, int ldb, float* c, int ldc,
                      bool accumulate) {
  const D d;
  V acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? hn::LoadU(d, c + r * ldc + v * kLanes) : hn::Zero(d);
  for (int kk = 0; kk < k; ++kk) {
    V bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = hn::LoadU(d, b + std::size_t(kk) * ldb + v * kLanes);
    for (int r = 0; r < MR; ++r) {
      const V av = hn::Set(d, a[r * a_rs + kk * a_ks]);
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) hn::StoreU(acc[r][v], d, c + r * ldc + v * kLanes);
}

template <int MR, int NV>
void gemm(int rows, int cols, int k, const float* a, int a_rs, int a_ks, const float* b, int ldb, float* c, int ldc,
          bool accumulate) {
  for (int c0 = 0; c0 < cols; c0 += NV * kLanes) {
    int r = 0;
    for (; r + MR <= rows; r += MR)
      micro<MR, NV>(k, a + r * a_rs, a_rs, a_ks, b + c0, ldb, c + r * ldc + c0, ldc, accumulate);
    for (; r < rows; ++r) micro<1, NV>(k, a + r * a_rs, a_rs, a_ks, b + c0, ldb, c + r * ldc + c0, ldc, accumulate);
  }
}

// Register blocks per target: MR rows x NV vectors of accumulators within the 16 (AVX2, SSE)
// or 32 (AVX-512) vector registers, next to NV loads of B and one broadcast of A.
constexpr int kWide = kLanes >= 16 ? 4 : 2;   // NV for 64 columns
constexpr int kRowsWide = 6;
constexpr int kNarrow = 2;                    // NV for 32 columns
constexpr int kRowsNarrow = kLanes >= 16 ? 12 : 6;

// ---- input transform: 6x6 tiles of `in` (channels C, side S, tile origin 4*t + offset) ----
// Writes v[point][tile][channel] for the chunk's tiles (tiles x tiles per image).
template <int C, int S>
void input_tiles(const float* in, int n0, int n1, int tiles, int offset, float* v) {
  const D d;
  const int per_image = tiles * tiles, count = (n1 - n0) * per_image;
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        for (int c0 = 0; c0 < C; c0 += kLanes) {
          V cols[6][6];   // after the pass over rows: cols[i][j] = (B^T d)[i][j]
          for (int j = 0; j < 6; ++j) {
            const int w = 4 * tx + offset + j;
            V x[6];
            for (int i = 0; i < 6; ++i) {
              const int h = 4 * ty + offset + i;
              x[i] = (h >= 0 && h < S && w >= 0 && w < S) ? hn::LoadU(d, in + at(n, C, S, c0, h, w)) : hn::Zero(d);
            }
            V o[6];
            bt6(x, o);
            for (int i = 0; i < 6; ++i) cols[i][j] = o[i];
          }
          for (int i = 0; i < 6; ++i) {
            V o[6];
            bt6(cols[i], o);
            for (int j = 0; j < 6; ++j) hn::StoreU(o[j], d, v + (std::size_t(i * 6 + j) * count + t) * C + c0);
          }
        }
      }
}

// ---- output transform: m[point][tile][channel] -> 4x4 tiles of `out` (channels C, side S) ----
template <int C, int S, bool kBiasRelu>
void output_tiles(const float* m, int n0, int n1, int tiles, const float* bias, float* out) {
  const D d;
  const int per_image = tiles * tiles, count = (n1 - n0) * per_image;
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        for (int c0 = 0; c0 < C; c0 += kLanes) {
          V rows[6][4];   // rows[i][q] = (m A)[i][q]
          for (int i = 0; i < 6; ++i) {
            V x[6];
            for (int j = 0; j < 6; ++j) x[j] = hn::LoadU(d, m + (std::size_t(i * 6 + j) * count + t) * C + c0);
            V o[4];
            at4(x, o);
            for (int q = 0; q < 4; ++q) rows[i][q] = o[q];
          }
          const V b = kBiasRelu ? hn::LoadU(d, bias + c0) : hn::Zero(d);
          for (int q = 0; q < 4; ++q) {
            const int w = 4 * tx + q;
            if (w >= S) break;
            V x[6];
            for (int i = 0; i < 6; ++i) x[i] = rows[i][q];
            V o[4];
            at4(x, o);
            for (int p = 0; p < 4; ++p) {
              const int h = 4 * ty + p;
              if (h >= S) break;
              V y = o[p];
              if constexpr (kBiasRelu) y = hn::Max(hn::Add(y, b), hn::Zero(d));
              hn::StoreU(y, d, out + at(n, C, S, c0, h, w));
            }
          }
        }
      }
}

// ---- the output gradient of the weight pass: 4x4 tiles of dy -> A dY A^T ----
void grad_tiles(const float* dy, int n0, int n1, float* m, float* bias_sum) {
  const D d;
  constexpr int tiles = kFwdTiles, per_image = tiles * tiles;
  const int count = (n1 - n0) * per_image;
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        for (int c0 = 0; c0 < kOut; c0 += kLanes) {
          V cols[6][4];   // cols[i][q] = (A dY)[i][q]
          V sum = hn::LoadU(d, bias_sum + c0);
          for (int q = 0; q < 4; ++q) {
            const int w = 4 * tx + q;
            V y[4];
            for (int p = 0; p < 4; ++p) {
              const int h = 4 * ty + p;
              // The tile's part beyond the 11x11 output is zero: it has no gradient.
              y[p] = (h < kOutSide && w < kOutSide) ? hn::LoadU(d, dy + at(n, kOut, kOutSide, c0, h, w)) : hn::Zero(d);
              sum = hn::Add(sum, y[p]);
            }
            V o[6];
            a6(y, o);
            for (int i = 0; i < 6; ++i) cols[i][q] = o[i];
          }
          hn::StoreU(sum, d, bias_sum + c0);
          for (int i = 0; i < 6; ++i) {
            V o[6];
            a6(cols[i], o);
            for (int j = 0; j < 6; ++j) hn::StoreU(o[j], d, m + (std::size_t(i * 6 + j) * count + t) * kOut + c0);
          }
        }
      }
}

// ---- the passes, over images [n0, n1) ----
void forward_images(const float* u, int n0, int n1, const float* x, const float* bias, float* y) {
  Scratch& s = scratch();
  for (int c0 = n0; c0 < n1; c0 += kFwdChunk) {
    const int c1 = std::min(n1, c0 + kFwdChunk), count = (c1 - c0) * kFwdTiles * kFwdTiles;
    s.v.resize(std::size_t(kPoints) * count * kIn);
    s.m.resize(std::size_t(kPoints) * count * kOut);
    input_tiles<kIn, kInSide>(x, c0, c1, kFwdTiles, 0, s.v.data());
    for (int p = 0; p < kPoints; ++p)
      gemm<kRowsWide, kWide>(count, kOut, kIn, s.v.data() + std::size_t(p) * count * kIn, kIn, 1,
                             u + std::size_t(p) * kIn * kOut, kOut, s.m.data() + std::size_t(p) * count * kOut, kOut,
                             false);
    output_tiles<kOut, kOutSide, true>(s.m.data(), c0, c1, kFwdTiles, bias, y);
  }
}

void backward_data_images(const float* u, int n0, int n1, const float* dy, float* dx) {
  Scratch& s = scratch();
  for (int c0 = n0; c0 < n1; c0 += kBwdChunk) {
    const int c1 = std::min(n1, c0 + kBwdChunk), count = (c1 - c0) * kBwdTiles * kBwdTiles;
    s.v.resize(std::size_t(kPoints) * count * kOut);
    s.m.resize(std::size_t(kPoints) * count * kIn);
    input_tiles<kOut, kOutSide>(dy, c0, c1, kBwdTiles, -2, s.v.data());
    for (int p = 0; p < kPoints; ++p)
      gemm<kRowsNarrow, kNarrow>(count, kIn, kOut, s.v.data() + std::size_t(p) * count * kOut, kOut, 1,
                                 u + std::size_t(p) * kOut * kIn, kIn, s.m.data() + std::size_t(p) * count * kIn, kIn,
                                 false);
    output_tiles<kIn, kInSide, false>(s.m.data(), c0, c1, kBwdTiles, nullptr, dx);
  }
}

// Accumulates dU[point][in][out] (float) and the bias gradient over images [n0, n1).
void backward_weights_images(int n0, int n1, const float* x, const float* dy, float* du, float* bias_sum) {
  Scratch& s = scratch();
  for (int c0 = n0; c0 < n1; c0 += kFwdChunk) {
    const int c1 = std::min(n1, c0 + kFwdChunk), count = (c1 - c0) * kFwdTiles * kFwdTiles;
    s.v.resize(std::size_t(kPoints) * count * kIn);
    s.m.resize(std::size_t(kPoints) * count * kOut);
    input_tiles<kIn, kInSide>(x, c0, c1, kFwdTiles, 0, s.v.data());
    grad_tiles(dy, c0, c1, s.m.data(), bias_sum);
    // dU[p][in][out] += sum over tiles of V[p][tile][in] dM[p][tile][out]: A = V^T.
    for (int p = 0; p < kPoints; ++p)
      gemm<kRowsWide, kWide>(kIn, kOut, count, s.v.data() + std::size_t(p) * count * kIn, 1, kIn,
                             s.m.data() + std::size_t(p) * count * kOut, kOut, du + std::size_t(p) * kIn * kOut, kOut,
                             true);
  }
}

// ---- weights: U = G g G^T, and dg = G^T dU G, vectorised over output channels ----
// g: [in][9][out] (the caller's transpose). u: [36][in][out].
void transform_weights(const float* g, int in, int out, float* u) {
  const D d;
  const float G[6][3] = {{1.0f / 4, 0, 0},
                         {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                         {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                         {1.0f / 24, 1.0f / 12, 1.0f / 6},
                         {1.0f / 24, -1.0f / 12, 1.0f / 6},
                         {0, 0, 1}};
  for (int ic = 0; ic < in; ++ic)
    for (int o0 = 0; o0 < out; o0 += kLanes) {
      V k[9];
      for (int t = 0; t < 9; ++t) k[t] = hn::LoadU(d, g + (std::size_t(ic) * 9 + t) * out + o0);
      V gk[6][3];   // G g
      for (int i = 0; i < 6; ++i)
        for (int c = 0; c < 3; ++c) {
          V acc = hn::Zero(d);
          for (int r = 0; r < 3; ++r)
            if (G[i][r] != 0.0f) acc = hn::MulAdd(hn::Set(d, G[i][r]), k[r * 3 + c], acc);
          gk[i][c] = acc;
        }
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 6; ++j) {
          V acc = hn::Zero(d);
          for (int c = 0; c < 3; ++c)
            if (G[j][c] != 0.0f) acc = hn::MulAdd(hn::Set(d, G[j][c]), gk[i][c], acc);
          hn::StoreU(acc, d, u + (std::size_t(i * 6 + j) * in + ic) * out + o0);
        }
    }
}

// du: [36][32 in][64 out] -> dg: [in][9][out].
void untransform_weights(const float* du, float* dg) {
  const D d;
  const float GT[3][6] = {{1.0f / 4, -1.0f / 6, -1.0f / 6, 1.0f / 24, 1.0f / 24, 0},
                          {0, -1.0f / 6, 1.0f / 6, 1.0f / 12, -1.0f / 12, 0},
                          {0, -1.0f / 6, -1.0f / 6, 1.0f / 6, 1.0f / 6, 1}};
  for (int ic = 0; ic < kIn; ++ic)
    for (int o0 = 0; o0 < kOut; o0 += kLanes) {
      V t[3][6];   // G^T dU
      for (int r = 0; r < 3; ++r)
        for (int j = 0; j < 6; ++j) {
          V acc = hn::Zero(d);
          for (int i = 0; i < 6; ++i)
            if (GT[r][i] != 0.0f)
              acc = hn::MulAdd(hn::Set(d, GT[r][i]), hn::LoadU(d, du + (std::size_t(i * 6 + j) * kIn + ic) * kOut + o0),
                               acc);
          t[r][j] = acc;
        }
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
          V acc = hn::Zero(d);
          for (int j = 0; j < 6; ++j)
            if (GT[c][j] != 0.0f) acc = hn::MulAdd(hn::Set(d, GT[c][j]), t[r][j], acc);
          hn::StoreU(acc, d, dg + (std::size_t(ic) * 9 + r * 3 + c) * kOut + o0);
        }
    }
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(forward_images);
HWY_EXPORT(backward_data_images);
HWY_EXPORT(backward_weights_images);
HWY_EXPORT(transform_weights);
HWY_EXPORT(untransform_weights);

void winograd_conv2_set_weights(const float* oihw, WinogradConv2Weights& w) {
  using namespace wino;
  init_simd_target();
  // Transposed so that the transform runs over contiguous output channels: [in][tap][out],
  // and for the data pass [out][tap][in] with the taps reversed (the 180-degree rotation).
  thread_local std::vector<float> fwd_taps, bwd_taps;
  fwd_taps.resize(std::size_t(kIn) * 9 * kOut);
  bwd_taps.resize(fwd_taps.size());
  for (int oc = 0; oc < kOut; ++oc)
    for (int ic = 0; ic < kIn; ++ic)
      for (int t = 0; t < 9; ++t) {
        const float g = oihw[(std::size_t(oc) * kIn + ic) * 9 + t];
        fwd_taps[(std::size_t(ic) * 9 + t) * kOut + oc] = g;
        bwd_taps[(std::size_t(oc) * 9 + (8 - t)) * kIn + ic] = g;
      }
  w.forward.resize(std::size_t(kPoints) * kIn * kOut);
  w.backward.resize(w.forward.size());
  HWY_DYNAMIC_DISPATCH(transform_weights)(fwd_taps.data(), kIn, kOut, w.forward.data());
  HWY_DYNAMIC_DISPATCH(transform_weights)(bwd_taps.data(), kOut, kIn, w.backward.data());
}

void winograd_conv2_forward(const WinogradConv2Weights& w, int n, const float* x, const float* bias, float* y) {
  init_simd_target();
  // Ranges of whole chunks, so every thread's GEMMs keep their full row blocks.
  const int chunks = (n + wino::kFwdChunk - 1) / wino::kFwdChunk;
  parallel_ranges(chunks, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(forward_images)(w.forward.data(), begin * wino::kFwdChunk,
                                         std::min(n, end * wino::kFwdChunk), x, bias, y);
  });
}

void winograd_conv2_backward_data(const WinogradConv2Weights& w, int n, const float* dy, float* dx) {
  init_simd_target();
  const int chunks = (n + wino::kBwdChunk - 1) / wino::kBwdChunk;
  parallel_ranges(chunks, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(backward_data_images)(w.backward.data(), begin * wino::kBwdChunk,
                                               std::min(n, end * wino::kBwdChunk), dy, dx);
  });
}

void winograd_conv2_backward_weights(int n, const float* x, const float* dy, float* dw, float* db) {
  using namespace wino;
  init_simd_target();
  const std::size_t du_size = std::size_t(kPoints) * kIn * kOut;
  const int chunks = (n + kFwdChunk - 1) / kFwdChunk;
  const int threads = std::max(1, std::min(omp_get_max_threads(), chunks));
  // One float accumulator per thread (each thread's chunks in order), summed in thread order:
  // deterministic for a given thread count.
  thread_local std::vector<float> partial;
  partial.assign((du_size + kOut) * threads, 0.0f);
  float* const part = partial.data();
  parallel_ranges(chunks, [&](int begin, int end) {
    const int t = threads == 1 ? 0 : omp_get_thread_num();
    float* mine = part + (du_size + kOut) * t;
    HWY_DYNAMIC_DISPATCH(backward_weights_images)(begin * kFwdChunk, std::min(n, end * kFwdChunk), x, dy, mine,
                                                  mine + du_size);
  });
  for (int t = 1; t < threads; ++t)
    for (std::size_t i = 0; i < du_size + kOut; ++i) part[i] += part[(du_size + kOut) * t + i];
  thread_local std::vector<float> dg;
  dg.resize(std::size_t(kIn) * 9 * kOut);
  HWY_DYNAMIC_DISPATCH(untransform_weights)(part, dg.data());
  for (int oc = 0; oc < kOut; ++oc) {
    for (int ic = 0; ic < kIn; ++ic)
      for (int t = 0; t < 9; ++t) dw[(std::size_t(oc) * kIn + ic) * 9 + t] = dg[(std::size_t(ic) * 9 + t) * kOut + oc];
    db[oc] = part[du_size + oc];
  }
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

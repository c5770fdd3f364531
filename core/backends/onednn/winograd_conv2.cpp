// Winograd F(4x4, 3x3) for conv2 (see winograd_conv2.h), one Highway source compiled for every
// instruction set. Transforms (Lavin & Gray, points 0, +-1, +-2, infinity):
//   forward  Y  = A^T [ U . V ] A,  U = G g G^T, V = B^T d B, over 6x6 input tiles 4 apart
//   backward dM = A dY A^T per tile (shared by both gradients), then
//            weights  dg = G^T [ sum over tiles dM . V ] G
//            data     dd = B [ U . dM ] B^T, added into the input gradient tile by tile (the
//                     tiles overlap by 2), i.e. the forward pass transposed: as little
//                     arithmetic as the forward, where a direct or a separate Winograd data
//                     pass (13x13 output: 16 tiles, not 9) costs twice as much.
// Vectors run over channels (the 16 of a block, or 8 or 4 of them), so each transform is the
// same few adds on whole vectors and each GEMM row is one tile.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/winograd_conv2.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
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
// Floats from one transform point's [32][64] weight matrix to the next: one cache line more
// than the matrix, so that the 36 points of one channel pair do not all fall into the same
// L1 set (8 KB apart they would, and the weight transforms ran 2x slower).
constexpr std::size_t kPointStride = std::size_t(kIn) * kOut + 16;
constexpr int kTiles = 3;                  // 4x4 output tiles per side of conv2's 11x11 output
// Images per chunk: tiles per chunk (9 per image) a multiple of the GEMM's 6 rows, buffers
// of a few hundred KB (L2).
constexpr int kChunk = 2;

static_assert(kOutSide == kInSide - 2 && (kTiles - 1) * 4 < kOutSide && kTiles * 4 >= kOutSide);

// Floats from one transform point to the next in a chunk's tile buffers ([point][tile][channel]):
// again one cache line more than the data, against L1 set conflicts.
inline std::size_t point_stride(int count, int channels) { return std::size_t(count) * channels + 16; }

// Element (n, c, h, w) of an n x channels x side x side nChw16c tensor.
inline std::size_t at(int n, int channels, int side, int c, int h, int w) {
  return ((((std::size_t(n) * (channels / kB) + c / kB) * side + h) * side + w) * kB) + c % kB;
}

// Pool2 (2x2, stride 2, floor: 11 -> 5) over conv2's output, fused into the transforms: each
// window lies inside one 4x4 output tile. Pooled values plain [n][64][5][5] (the flatten fc1
// reads), argmax bytes as blocked_pool.h stores them for 16-channel blocks.
constexpr int kPooled = cnn::kPool2Side;   // 5
static_assert(2 * kPooled <= kOutSide && 2 * kPooled + 1 >= kOutSide && kTiles * 2 >= kPooled);
inline std::size_t pooled_at(int n, int c, int ph, int pw) {
  return ((std::size_t(n) * kOut + c) * kPooled + ph) * kPooled + pw;
}
inline std::size_t arg_at(int n, int c, int ph, int pw) {
  return (((std::size_t(n) * (kOut / kB) + c / kB) * kPooled + ph) * kPooled + pw) * kB + c % kB;
}

// Per-thread chunk buffers, grown on first use.
struct Scratch {
  std::vector<float> v, m, dv;
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

// B v (6 -> 6): the transpose of bt6, for the input gradient.
HWY_INLINE void b6(const V (&v)[6], V (&o)[6]) {
  const D d;
  const V c4 = hn::Set(d, 4.0f), c5 = hn::Set(d, 5.0f), c2 = hn::Set(d, 2.0f);
  o[0] = hn::Mul(c4, v[0]);
  o[1] = hn::MulAdd(c4, hn::Add(hn::Sub(v[2], v[1]), v[5]), hn::Mul(c2, hn::Sub(v[4], v[3])));
  o[2] = hn::Neg(hn::MulAdd(c5, v[0], hn::MulAdd(c4, hn::Add(v[1], v[2]), hn::Add(v[3], v[4]))));
  o[3] = hn::NegMulAdd(c5, v[5], hn::MulAdd(c2, hn::Sub(v[3], v[4]), hn::Sub(v[1], v[2])));
  o[4] = hn::Add(hn::Add(hn::Add(v[0], v[1]), hn::Add(v[2], v[3])), v[4]);
  o[5] = v[5];
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

// The rows left after the whole MR blocks (fewer than MR), as one block of that many.
template <int MR, int NV>
HWY_INLINE void micro_rows(int rows, int k, const float* a, int a_rs, int a_ks, const float* b, int ldb, float* c,
                           int ldc, bool accumulate) {
  if constexpr (MR > 0) {
    if (rows == MR)
      micro<MR, NV>(k, a, a_rs, a_ks, b, ldb, c, ldc, accumulate);
    else
      micro_rows<MR - 1, NV>(rows, k, a, a_rs, a_ks, b, ldb, c, ldc, accumulate);
  }
}

template <int MR, int NV>
void gemm(int rows, int cols, int k, const float* a, int a_rs, int a_ks, const float* b, int ldb, float* c, int ldc,
          bool accumulate) {
  for (int c0 = 0; c0 < cols; c0 += NV * kLanes) {
    int r = 0;
    for (; r + MR <= rows; r += MR)
      micro<MR, NV>(k, a + r * a_rs, a_rs, a_ks, b + c0, ldb, c + r * ldc + c0, ldc, accumulate);
    if (r < rows)
      micro_rows<MR - 1, NV>(rows - r, k, a + r * a_rs, a_rs, a_ks, b + c0, ldb, c + r * ldc + c0, ldc, accumulate);
  }
}

// Register blocks per target: MR rows x NV vectors of accumulators within the 16 (AVX2, SSE)
// or 32 (AVX-512) vector registers, next to NV loads of B and one broadcast of A; MR divides
// the 18 tiles of a chunk, and for the weight gradient's 32 rows where it can.
constexpr bool kZmm = kLanes >= 16;
constexpr int kWide = kZmm ? 4 : 2;           // NV for 64 columns (forward, weight gradient)
constexpr int kRowsWide = 6;                  // tile rows (forward)
constexpr int kRowsWeights = 4;               // input-channel rows (weight gradient): 32 = 8 blocks
constexpr int kNarrow = 2;                    // NV for 32 columns (input gradient)
constexpr int kRowsNarrow = kZmm ? 9 : 6;

// ---- input transform: the 6x6 tiles of x (beyond its 13x13: zeros) -> B^T d B ----
// One tile and channel vector: src at the tile's corner (rows S*kB floats apart, columns kB);
// dst at point 0, the next point `stride` floats on. kFull: all 36 inside x (most tiles).
template <bool kFull>
HWY_INLINE void input_tile(const float* src, int rows, int cols, float* dst, std::size_t stride) {
  const D d;
  constexpr int S = kInSide;
  V t[6][6];   // after the pass over rows: t[i][j] = (B^T d)[i][j]
  for (int j = 0; j < 6; ++j) {
    V x[6];
    for (int i = 0; i < 6; ++i)
      x[i] = (kFull || (i < rows && j < cols)) ? hn::LoadU(d, src + (i * S + j) * kB) : hn::Zero(d);
    V o[6];
    bt6(x, o);
    for (int i = 0; i < 6; ++i) t[i][j] = o[i];
  }
  for (int i = 0; i < 6; ++i) {
    V o[6];
    bt6(t[i], o);
    for (int j = 0; j < 6; ++j) hn::StoreU(o[j], d, dst + (i * 6 + j) * stride);
  }
}

// Writes v[point][tile][channel] for the chunk's tiles.
void input_tiles(const float* in, int n0, int n1, float* v) {
  constexpr int C = kIn, S = kInSide, tiles = kTiles;
  const int per_image = tiles * tiles, count = (n1 - n0) * per_image;
  const std::size_t stride = point_stride(count, C);
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        const int rows = std::min(6, S - 4 * ty), cols = std::min(6, S - 4 * tx);
        for (int c0 = 0; c0 < C; c0 += kLanes) {
          const float* src = in + at(n, C, S, c0, 4 * ty, 4 * tx);
          float* dst = v + std::size_t(t) * C + c0;
          if (rows == 6 && cols == 6)
            input_tile<true>(src, 6, 6, dst, stride);
          else
            input_tile<false>(src, rows, cols, dst, stride);
        }
      }
}

// ---- output transform: m[point][tile][channel] -> relu(A^T m A + bias) ----
// Writes the valid part to `out` (unless null) and, unless `pooled` is null, its 2x2 max-pool
// and argmax (strict '>' in row-major window order: the first maximum wins).
void output_tiles(const float* m, int n0, int n1, const float* bias, float* out, float* pooled, uint8_t* arg) {
  const D d;
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint8_t, D> d8;
  constexpr int C = kOut, S = kOutSide, tiles = kTiles;
  const int per_image = tiles * tiles, count = (n1 - n0) * per_image;
  const auto plane = hn::Mul(hn::Iota(di, 0), hn::Set(di, kPooled * kPooled));   // lane c -> channel c's plane
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        for (int c0 = 0; c0 < C; c0 += kLanes) {
          V rows[6][4];   // rows[i][q] = (m A)[i][q]
          const float* src = m + std::size_t(t) * C + c0;
          const std::size_t stride = point_stride(count, C);
          for (int i = 0; i < 6; ++i) {
            V x[6];
            for (int j = 0; j < 6; ++j) x[j] = hn::LoadU(d, src + (i * 6 + j) * stride);
            V o[4];
            at4(x, o);
            for (int q = 0; q < 4; ++q) rows[i][q] = o[q];
          }
          const V b = hn::LoadU(d, bias + c0);
          V y[4][4];
          for (int q = 0; q < 4; ++q) {
            V x[6];
            for (int i = 0; i < 6; ++i) x[i] = rows[i][q];
            V o[4];
            at4(x, o);
            for (int p = 0; p < 4; ++p) y[p][q] = hn::Max(hn::Add(o[p], b), hn::Zero(d));
          }
          if (out)
            for (int p = 0; p < 4 && 4 * ty + p < S; ++p)
              for (int q = 0; q < 4 && 4 * tx + q < S; ++q) hn::StoreU(y[p][q], d, out + at(n, C, S, c0, 4 * ty + p, 4 * tx + q));
          if (!pooled) continue;
          for (int wr = 0; wr < 2; ++wr)
            for (int wc = 0; wc < 2; ++wc) {
              const int ph = 2 * ty + wr, pw = 2 * tx + wc;
              if (ph >= kPooled || pw >= kPooled) continue;   // the floor's dropped row/column
              const V v[4] = {y[2 * wr][2 * wc], y[2 * wr][2 * wc + 1], y[2 * wr + 1][2 * wc], y[2 * wr + 1][2 * wc + 1]};
              V mx = v[0];
              auto k = hn::Zero(di);
              for (int q = 1; q < 4; ++q) {
                const auto gt = hn::Gt(v[q], mx);
                mx = hn::IfThenElse(gt, v[q], mx);
                k = hn::IfThenElse(hn::RebindMask(di, gt), hn::Set(di, q), k);
              }
              hn::ScatterIndex(mx, d, pooled + pooled_at(n, c0, ph, pw), plane);
              hn::StoreU(hn::DemoteTo(d8, k), d8, arg + arg_at(n, c0, ph, pw));
            }
        }
      }
}

// ---- the output gradient: 4x4 tiles of dY -> A dY A^T; bias_sum (unless null) += dY ----
// dY is g.dy, or (g.dy null) rebuilt from pool2's side exactly as max_pool_backward_relu
// would write it: each window's pooled gradient, masked by the ReLU (pooled > 0), at its
// argmax, zero elsewhere and in the floor's dropped row/column.
void grad_tiles(const Conv2OutputGrad& g, int n0, int n1, float* m, float* bias_sum) {
  const D d;
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint8_t, D> d8;
  constexpr int tiles = kTiles, per_image = tiles * tiles;
  const int count = (n1 - n0) * per_image;
  const auto plane = hn::Mul(hn::Iota(di, 0), hn::Set(di, kPooled * kPooled));
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        for (int c0 = 0; c0 < kOut; c0 += kLanes) {
          V y[4][4];
          if (g.dy) {
            // The tile's part beyond the 11x11 output is zero: it has no gradient.
            const int rows = std::min(4, kOutSide - 4 * ty), cols = std::min(4, kOutSide - 4 * tx);
            const float* src = g.dy + at(n, kOut, kOutSide, c0, 4 * ty, 4 * tx);
            for (int p = 0; p < 4; ++p)
              for (int q = 0; q < 4; ++q)
                y[p][q] = (p < rows && q < cols) ? hn::LoadU(d, src + (p * kOutSide + q) * kB) : hn::Zero(d);
          } else {
            for (int wr = 0; wr < 2; ++wr)
              for (int wc = 0; wc < 2; ++wc) {
                const int ph = 2 * ty + wr, pw = 2 * tx + wc;
                V gv = hn::Zero(d);
                auto k = hn::Set(di, 4);   // matches no position
                if (ph < kPooled && pw < kPooled) {
                  const std::size_t o = pooled_at(n, c0, ph, pw);
                  gv = hn::IfThenElseZero(hn::Gt(hn::GatherIndex(d, g.pooled + o, plane), hn::Zero(d)),
                                          hn::GatherIndex(d, g.d_pooled + o, plane));
                  k = hn::PromoteTo(di, hn::LoadU(d8, g.arg + arg_at(n, c0, ph, pw)));
                }
                for (int q = 0; q < 4; ++q)
                  y[2 * wr + q / 2][2 * wc + q % 2] = hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, q))), gv);
              }
          }
          V cols[6][4];   // cols[i][q] = (A dY)[i][q]
          V sum = bias_sum ? hn::LoadU(d, bias_sum + c0) : hn::Zero(d);
          for (int q = 0; q < 4; ++q) {
            V col[4];
            for (int p = 0; p < 4; ++p) {
              col[p] = y[p][q];
              sum = hn::Add(sum, col[p]);
            }
            V o[6];
            a6(col, o);
            for (int i = 0; i < 6; ++i) cols[i][q] = o[i];
          }
          if (bias_sum) hn::StoreU(sum, d, bias_sum + c0);
          float* dst = m + std::size_t(t) * kOut + c0;
          const std::size_t stride = point_stride(count, kOut);
          for (int i = 0; i < 6; ++i) {
            V o[6];
            a6(cols[i], o);
            for (int j = 0; j < 6; ++j) hn::StoreU(o[j], d, dst + (i * 6 + j) * stride);
          }
        }
      }
}

// ---- input gradient: dv[point][tile][channel] -> B dV B^T, into dx tile by tile ----
// Tiles go in order, so the overlaps add up in one fixed order; every element of the chunk's
// images is written.
void input_grad_tiles(const float* dv, int n0, int n1, float* dx) {
  const D d;
  constexpr int C = kIn, S = kInSide, tiles = kTiles, per_image = tiles * tiles;
  const int count = (n1 - n0) * per_image;
  const std::size_t stride = point_stride(count, C);
  for (int n = n0; n < n1; ++n)
    for (int ty = 0; ty < tiles; ++ty)
      for (int tx = 0; tx < tiles; ++tx) {
        const int t = (n - n0) * per_image + ty * tiles + tx;
        // The zero row/column past x's edge has no gradient to keep.
        const int rows = std::min(6, S - 4 * ty), cols = std::min(6, S - 4 * tx);
        for (int c0 = 0; c0 < C; c0 += kLanes) {
          const float* src = dv + std::size_t(t) * C + c0;
          V t6[6][6];   // t6[k][j] = (B dV)[k][j]
          for (int j = 0; j < 6; ++j) {
            V x[6];
            for (int i = 0; i < 6; ++i) x[i] = hn::LoadU(d, src + (i * 6 + j) * stride);
            V o[6];
            b6(x, o);
            for (int k = 0; k < 6; ++k) t6[k][j] = o[k];
          }
          // Tiles overlap by 2 rows and columns: an element that an earlier tile (above or to
          // the left) already wrote is added to, every other one written.
          float* dst = dx + at(n, C, S, c0, 4 * ty, 4 * tx);
          for (int k = 0; k < rows; ++k) {
            V o[6];
            b6(t6[k], o);
            for (int l = 0; l < cols; ++l) {
              float* p = dst + (k * S + l) * kB;
              const bool first = (ty == 0 || k >= 2) && (tx == 0 || l >= 2);
              hn::StoreU(first ? o[l] : hn::Add(hn::LoadU(d, p), o[l]), d, p);
            }
          }
        }
      }
}

// ---- the passes, over images [n0, n1) ----
void forward_images(const float* u, int n0, int n1, const float* x, const float* bias, float* y, float* pooled,
                    uint8_t* arg) {
  Scratch& s = scratch();
  for (int c0 = n0; c0 < n1; c0 += kChunk) {
    const int c1 = std::min(n1, c0 + kChunk), count = (c1 - c0) * kTiles * kTiles;
    s.v.resize(kPoints * point_stride(count, kIn));
    s.m.resize(kPoints * point_stride(count, kOut));
    input_tiles(x, c0, c1, s.v.data());
    for (int p = 0; p < kPoints; ++p)
      gemm<kRowsWide, kWide>(count, kOut, kIn, s.v.data() + p * point_stride(count, kIn), kIn, 1,
                             u + std::size_t(p) * kPointStride, kOut, s.m.data() + p * point_stride(count, kOut), kOut,
                             false);
    output_tiles(s.m.data(), c0, c1, bias, y, pooled, arg);
  }
}

// Both gradients from one dM per chunk. dx (may be null): overwritten for images [n0, n1).
// du (may be null): dU[point][in][out] accumulated in float, and bias_sum the bias gradient.
void backward_images(const float* u_t, int n0, int n1, const float* x, const Conv2OutputGrad& dy, float* dx,
                     float* du, float* bias_sum) {
  Scratch& s = scratch();
  for (int c0 = n0; c0 < n1; c0 += kChunk) {
    const int c1 = std::min(n1, c0 + kChunk), count = (c1 - c0) * kTiles * kTiles;
    s.m.resize(kPoints * point_stride(count, kOut));
    grad_tiles(dy, c0, c1, s.m.data(), bias_sum);
    if (du) {
      // dU[p][in][out] += sum over tiles of V[p][tile][in] dM[p][tile][out]: A = V^T.
      s.v.resize(kPoints * point_stride(count, kIn));
      input_tiles(x, c0, c1, s.v.data());
      for (int p = 0; p < kPoints; ++p)
        gemm<kRowsWeights, kWide>(kIn, kOut, count, s.v.data() + p * point_stride(count, kIn), 1, kIn,
                               s.m.data() + p * point_stride(count, kOut), kOut, du + std::size_t(p) * kPointStride,
                               kOut, true);
    }
    if (dx) {
      // dV[p][tile][in] = sum over out of dM[p][tile][out] U[p][in][out], with U^T = u_t[p][out][in].
      s.dv.resize(kPoints * point_stride(count, kIn));
      for (int p = 0; p < kPoints; ++p)
        gemm<kRowsNarrow, kNarrow>(count, kIn, kOut, s.m.data() + p * point_stride(count, kOut), kOut, 1,
                                   u_t + std::size_t(p) * kPointStride, kIn, s.dv.data() + p * point_stride(count, kIn),
                                   kIn, false);
      input_grad_tiles(s.dv.data(), c0, c1, dx);
    }
  }
}

// ---- weights: U = G g G^T, and dg = G^T dU G, vectorised over output channels ----
// G x (3 -> 6): rows (1/4, 0, 0), -(1, 1, 1)/6, -(1, -1, 1)/6, (1/24, 1/12, 1/6),
// (1/24, -1/12, 1/6), (0, 0, 1).
HWY_INLINE void g6(const V (&x)[3], V (&o)[6]) {
  const D d;
  const V quarter = hn::Set(d, 0.25f), sixth = hn::Set(d, 1.0f / 6), twelfth = hn::Set(d, 1.0f / 12),
          twentyfourth = hn::Set(d, 1.0f / 24);
  const V ac = hn::Add(x[0], x[2]);
  const V u = hn::MulAdd(twentyfourth, x[0], hn::Mul(sixth, x[2]));
  o[0] = hn::Mul(quarter, x[0]);
  o[1] = hn::Neg(hn::Mul(sixth, hn::Add(ac, x[1])));
  o[2] = hn::Mul(sixth, hn::Sub(x[1], ac));
  o[3] = hn::MulAdd(twelfth, x[1], u);
  o[4] = hn::NegMulAdd(twelfth, x[1], u);
  o[5] = x[2];
}

// G^T y (6 -> 3): the transpose of g6.
HWY_INLINE void gt3(const V (&y)[6], V (&o)[3]) {
  const D d;
  const V quarter = hn::Set(d, 0.25f), sixth = hn::Set(d, 1.0f / 6), twelfth = hn::Set(d, 1.0f / 12),
          twentyfourth = hn::Set(d, 1.0f / 24);
  const V s12 = hn::Add(y[1], y[2]), d21 = hn::Sub(y[2], y[1]);
  const V s34 = hn::Add(y[3], y[4]), d34 = hn::Sub(y[3], y[4]);
  o[0] = hn::MulAdd(quarter, y[0], hn::MulAdd(twentyfourth, s34, hn::Neg(hn::Mul(sixth, s12))));
  o[1] = hn::MulAdd(sixth, d21, hn::Mul(twelfth, d34));
  o[2] = hn::MulAdd(sixth, hn::Sub(s34, s12), y[5]);
}

// g: [in][9][out] (the caller's rearrangement). u: [36][in][out].
void transform_weights(const float* g, int in, int out, float* u) {
  const D d;
  constexpr std::size_t stride = kPointStride;
  for (int ic = 0; ic < in; ++ic)
    for (int o0 = 0; o0 < out; o0 += kLanes) {
      const float* src = g + std::size_t(ic) * 9 * out + o0;
      V t[6][3];   // t[i][c] = (G g)[i][c]
      for (int c = 0; c < 3; ++c) {
        const V x[3] = {hn::LoadU(d, src + c * out), hn::LoadU(d, src + (3 + c) * out), hn::LoadU(d, src + (6 + c) * out)};
        V o[6];
        g6(x, o);
        for (int i = 0; i < 6; ++i) t[i][c] = o[i];
      }
      float* dst = u + std::size_t(ic) * out + o0;
      for (int i = 0; i < 6; ++i) {
        V o[6];
        g6(t[i], o);
        for (int j = 0; j < 6; ++j) hn::StoreU(o[j], d, dst + (i * 6 + j) * stride);
      }
    }
}

// du: [36][32 in][64 out] -> dg: [in][9][out].
void untransform_weights(const float* du, float* dg) {
  const D d;
  constexpr std::size_t stride = kPointStride;
  for (int ic = 0; ic < kIn; ++ic)
    for (int o0 = 0; o0 < kOut; o0 += kLanes) {
      const float* src = du + std::size_t(ic) * kOut + o0;
      V t[3][6];   // t[r][j] = (G^T dU)[r][j]
      for (int j = 0; j < 6; ++j) {
        V y[6];
        for (int i = 0; i < 6; ++i) y[i] = hn::LoadU(d, src + (i * 6 + j) * stride);
        V o[3];
        gt3(y, o);
        for (int r = 0; r < 3; ++r) t[r][j] = o[r];
      }
      float* dst = dg + std::size_t(ic) * 9 * kOut + o0;
      for (int r = 0; r < 3; ++r) {
        V o[3];
        gt3(t[r], o);
        for (int c = 0; c < 3; ++c) hn::StoreU(o[c], d, dst + (r * 3 + c) * kOut);
      }
    }
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(forward_images);
HWY_EXPORT(backward_images);
HWY_EXPORT(transform_weights);
HWY_EXPORT(untransform_weights);

void winograd_conv2_set_weights(const float* oihw, WinogradConv2Weights& w, bool forward, bool backward) {
  using namespace wino;
  // Rearranged so that the transform runs over contiguous channels: [in][tap][out] for U,
  // [out][tap][in] for U^T (the same per-pair transform, stored the other way round).
  thread_local std::vector<float> taps;
  taps.resize(std::size_t(kIn) * 9 * kOut);
  // (Writes in order, reads strided: the cheaper way round.)
  if (forward) {
    for (int ic = 0; ic < kIn; ++ic)
      for (int t = 0; t < 9; ++t)
        for (int oc = 0; oc < kOut; ++oc)
          taps[(std::size_t(ic) * 9 + t) * kOut + oc] = oihw[(std::size_t(oc) * kIn + ic) * 9 + t];
    w.forward.resize(kPoints * kPointStride);
    HWY_DYNAMIC_DISPATCH(transform_weights)(taps.data(), kIn, kOut, w.forward.data());
  }
  if (backward) {
    for (int oc = 0; oc < kOut; ++oc)
      for (int t = 0; t < 9; ++t)
        for (int ic = 0; ic < kIn; ++ic)
          taps[(std::size_t(oc) * 9 + t) * kIn + ic] = oihw[(std::size_t(oc) * kIn + ic) * 9 + t];
    w.transposed.resize(kPoints * kPointStride);
    HWY_DYNAMIC_DISPATCH(transform_weights)(taps.data(), kOut, kIn, w.transposed.data());
  }
}

void winograd_conv2_forward(const WinogradConv2Weights& w, int n, const float* x, const float* bias, float* y,
                            float* pooled, uint8_t* arg) {
  // Ranges of whole chunks, so every thread's GEMMs keep their full row blocks.
  const int chunks = (n + wino::kChunk - 1) / wino::kChunk;
  parallel_ranges(chunks, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(forward_images)(w.forward.data(), begin * wino::kChunk, std::min(n, end * wino::kChunk), x,
                                         bias, y, pooled, arg);
  });
}

void winograd_conv2_backward(const WinogradConv2Weights& w, int n, const float* x, const Conv2OutputGrad& dy,
                             float* dx, float* dw, float* db) {
  using namespace wino;
  const std::size_t du_size = kPoints * kPointStride;
  const int chunks = (n + kChunk - 1) / kChunk;
  const int threads = std::max(1, std::min(omp_get_max_threads(), chunks));
  // One float accumulator per thread (each thread's chunks in order), summed in thread order:
  // deterministic for a given thread count.
  thread_local std::vector<float> partial;
  if (dw) partial.assign((du_size + kOut) * threads, 0.0f);
  float* const part = dw ? partial.data() : nullptr;
  parallel_ranges(chunks, [&](int begin, int end) {
    float* mine = part ? part + (du_size + kOut) * (threads == 1 ? 0 : omp_get_thread_num()) : nullptr;
    HWY_DYNAMIC_DISPATCH(backward_images)(w.transposed.data(), begin * kChunk, std::min(n, end * kChunk), x, dy, dx,
                                          mine, mine ? mine + du_size : nullptr);
  });
  if (!dw) return;
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

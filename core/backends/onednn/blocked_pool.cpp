// Max-pool forward/backward loops for channel-blocked layouts (see blocked_pool.h): one Highway
// source compiled for every instruction set; a vector holds consecutive channels of one input
// block (up to 16 lanes), so a window's 4 taps are 4 loads.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/blocked_pool.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>
#include <cstdint>

#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/parallel.h"
#include "backends/onednn/simd_target.h"
#include "util/error.h"

#ifndef MB_ONEDNN_BLOCKED_POOL_SHARED
#define MB_ONEDNN_BLOCKED_POOL_SHARED
namespace mb::onednn::pool {

// Output element (n, c, oh, ow) in the layout blocked by Bo.
template <int Bo>
inline std::size_t out_index(const PoolShape& s, int n, int c, int oh, int ow) {
  const int cb = c / Bo, cl = c % Bo;
  return ((((std::size_t(n) * (s.channels / Bo) + cb) * s.out_side + oh) * s.out_side + ow) * Bo) + cl;
}

// The argmax bytes are stored per window and input-block lane: (window index) * Bi + lane.
inline std::size_t arg_index(const PoolShape& s, int n, int cb, int blocks, int oh, int ow, int bi) {
  return (((std::size_t(n) * blocks + cb) * s.out_side + oh) * s.out_side + ow) * bi;
}

}  // namespace mb::onednn::pool
#endif

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace pool;

// Bo is Bi (a plain store) or 1: plain NCHW, where the lanes of one input block are one
// output plane apart (a scatter; the loop is bound by reading the conv output anyway).
template <int Bi, int Bo>
void forward_images(const PoolShape& s, int n_begin, int n_end, const float* in, float* out, uint8_t* arg) {
  static_assert(Bo == Bi || Bo == 1);
  const hn::CappedTag<float, Bi> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const int side = s.in_side, blocks = s.channels / Bi;
  const auto plane_stride = hn::Mul(hn::Iota(di, 0), hn::Set(di, s.out_side * s.out_side));
  for (int n = n_begin; n < n_end; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      const float* plane = in + (std::size_t(n) * blocks + cb) * side * side * Bi;
      for (int oh = 0; oh < s.out_side; ++oh)
        for (int ow = 0; ow < s.out_side; ++ow) {
          const float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * Bi;
          const float* r1 = r0 + side * Bi;
          uint8_t* a = arg + arg_index(s, n, cb, blocks, oh, ow, Bi);
          for (int j = 0; j < Bi; j += lanes) {
            // Strict '>' (ordered) in row-major window order: the first maximum wins, as in PyTorch.
            auto m = hn::LoadU(d, r0 + j);
            auto k = hn::Zero(di);
            int q = 1;
            for (const float* p : {r0 + Bi + j, r1 + j, r1 + Bi + j}) {
              const auto v = hn::LoadU(d, p);
              const auto gt = hn::Gt(v, m);
              m = hn::IfThenElse(gt, v, m);
              k = hn::IfThenElse(hn::RebindMask(di, gt), hn::Set(di, q++), k);
            }
            const std::size_t o = out_index<Bo>(s, n, cb * Bi + j, oh, ow);
            if constexpr (Bo == Bi)
              hn::StoreU(m, d, out + o);
            else
              hn::ScatterIndex(m, d, out + o, plane_stride);
            hn::StoreU(hn::DemoteTo(d8, k), d8, a + j);
          }
        }
    }
}

template <int Bi, int Bo>
void backward_images(const PoolShape& s, int n_begin, int n_end, const float* d_out, const float* out,
                     const uint8_t* arg, float* d_in) {
  static_assert(Bo == Bi || Bo == 1);
  const hn::CappedTag<float, Bi> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const int side = s.in_side, blocks = s.channels / Bi;
  const bool odd = side % 2 != 0;
  const auto plane_stride = hn::Mul(hn::Iota(di, 0), hn::Set(di, s.out_side * s.out_side));
  const auto zero = hn::Zero(d);
  for (int n = n_begin; n < n_end; ++n)
    for (int cb = 0; cb < blocks; ++cb) {
      float* plane = d_in + (std::size_t(n) * blocks + cb) * side * side * Bi;
      for (int oh = 0; oh < s.out_side; ++oh) {
        for (int ow = 0; ow < s.out_side; ++ow) {
          float* r0 = plane + (std::size_t(2 * oh) * side + 2 * ow) * Bi;
          float* r1 = r0 + side * Bi;
          const uint8_t* a = arg + arg_index(s, n, cb, blocks, oh, ow, Bi);
          for (int j = 0; j < Bi; j += lanes) {
            const std::size_t o = out_index<Bo>(s, n, cb * Bi + j, oh, ow);
            hn::Vec<decltype(d)> p, g;
            if constexpr (Bo == Bi) {
              p = hn::LoadU(d, out + o);
              g = hn::LoadU(d, d_out + o);
            } else {
              p = hn::GatherIndex(d, out + o, plane_stride);
              g = hn::GatherIndex(d, d_out + o, plane_stride);
            }
            g = hn::IfThenElseZero(hn::Gt(p, zero), g);   // the ReLU derivative
            const auto k = hn::PromoteTo(di, hn::LoadU(d8, a + j));
            hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, 0))), g), d, r0 + j);
            hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, 1))), g), d, r0 + Bi + j);
            hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, 2))), g), d, r1 + j);
            hn::StoreU(hn::IfThenElseZero(hn::RebindMask(d, hn::Eq(k, hn::Set(di, 3))), g), d, r1 + Bi + j);
          }
        }
        if (odd)   // the column the floor drops
          for (int r = 2 * oh; r < 2 * oh + 2; ++r)
            for (int j = 0; j < Bi; j += lanes) hn::StoreU(zero, d, plane + (std::size_t(r) * side + side - 1) * Bi + j);
      }
      if (odd) {   // the row the floor drops
        float* p = plane + std::size_t(side - 1) * side * Bi;
        for (int j = 0; j < side * Bi; j += lanes) hn::StoreU(zero, d, p + j);
      }
    }
}

using ForwardFn = void (*)(const PoolShape&, int, int, const float*, float*, uint8_t*);
using BackwardFn = void (*)(const PoolShape&, int, int, const float*, const float*, const uint8_t*, float*);

template <int Bi>
void pick(int out_block, ForwardFn& f, BackwardFn& b) {
  if (out_block == Bi) {
    f = forward_images<Bi, Bi>;
    b = backward_images<Bi, Bi>;
  } else if (out_block == 1) {
    f = forward_images<Bi, 1>;
    b = backward_images<Bi, 1>;
  }
}

// The wrapper has validated the shape.
void pool_forward(const PoolShape& s, int n_begin, int n_end, const float* in, float* out, uint8_t* arg) {
  ForwardFn f = nullptr;
  BackwardFn b = nullptr;
  if (s.in_block == 16) pick<16>(s.out_block, f, b);
  if (s.in_block == 8) pick<8>(s.out_block, f, b);
  if (s.in_block == 1) pick<1>(s.out_block, f, b);
  f(s, n_begin, n_end, in, out, arg);
}

void pool_backward(const PoolShape& s, int n_begin, int n_end, const float* d_out, const float* out,
                   const uint8_t* arg, float* d_in) {
  ForwardFn f = nullptr;
  BackwardFn b = nullptr;
  if (s.in_block == 16) pick<16>(s.out_block, f, b);
  if (s.in_block == 8) pick<8>(s.out_block, f, b);
  if (s.in_block == 1) pick<1>(s.out_block, f, b);
  b(s, n_begin, n_end, d_out, out, arg, d_in);
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {
namespace {

HWY_EXPORT(pool_forward);
HWY_EXPORT(pool_backward);

void check_shape(const PoolShape& s) {
  const bool blocks_ok = pool_block_supported(s.in_block) && (s.out_block == s.in_block || s.out_block == 1);
  MB_CHECK(blocks_ok && s.channels % s.in_block == 0 && s.out_side == s.in_side / 2 && s.batch >= 0, Error,
           "max-pool: unsupported layout (in block {}, out block {}, {} channels, side {} -> {})", s.in_block,
           s.out_block, s.channels, s.in_side, s.out_side);
}

}  // namespace

bool pool_block_supported(int block) { return block == 1 || block == 8 || block == 16; }

void max_pool_forward(const PoolShape& s, const float* in, float* out, uint8_t* arg) {
  check_shape(s);
  parallel_ranges(s.batch,
                  [&](int begin, int end) { HWY_DYNAMIC_DISPATCH(pool_forward)(s, begin, end, in, out, arg); });
}

void max_pool_backward_relu(const PoolShape& s, const float* d_out, const float* out, const uint8_t* arg,
                            float* d_in) {
  check_shape(s);
  parallel_ranges(s.batch, [&](int begin, int end) {
    HWY_DYNAMIC_DISPATCH(pool_backward)(s, begin, end, d_out, out, arg, d_in);
  });
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

// round_to_wire (wire_format.h) a vector at a time, for every SIMD target (Highway): each value
// replaced by the float that to_bf16 / to_fp16 and back would give, bit for bit, without the
// 16-bit detour. Why vectors: a compressed all-reduce rounds every gradient twice per step,
// and the scalar conversions (~5 ns a value) cost more than the bytes they saved in memory.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "comm/wire_round.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "comm/wire_format.h"

HWY_BEFORE_NAMESPACE();
namespace mb::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// bfloat16: the upper 16 bits, rounded to nearest even by an integer carry; a NaN stays a quiet
// NaN. Returns how many leading values it rounded (whole vectors).
std::size_t round_bf16_vectors(float* v, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const std::size_t lanes = hn::Lanes(df);
  const auto upper = hn::Set(di, int32_t(0xffff0000u)), one = hn::Set(di, 1), half = hn::Set(di, 0x7fff);
  const auto magnitude = hn::Set(di, 0x7fffffff), inf = hn::Set(di, 0x7f800000), quiet = hn::Set(di, 0x00400000);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto u = hn::BitCast(di, hn::LoadU(df, v + i));
    const auto rounded = hn::And(hn::Add(hn::Add(u, half), hn::And(hn::ShiftRight<16>(u), one)), upper);
    const auto nan = hn::Gt(hn::And(u, magnitude), inf);
    const auto out = hn::IfThenElse(nan, hn::And(hn::Or(u, quiet), upper), rounded);
    hn::StoreU(hn::BitCast(df, out), df, v + i);
  }
  return i;
}

// binary16: 11 significant bits by an integer carry where the result is normal, the 2^-24 grid
// below 2^-14 (one float addition of 0.5 rounds there, to nearest even), infinity from 65520 on
// (the tie at 65520 rounds to the even 65536), NaN the canonical quiet one, the sign kept.
std::size_t round_fp16_vectors(float* v, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const std::size_t lanes = hn::Lanes(df);
  const auto sign_bit = hn::Set(di, int32_t(0x80000000u)), magnitude = hn::Set(di, 0x7fffffff);
  const auto carry = hn::Set(di, 0xfff), one = hn::Set(di, 1), keep = hn::Set(di, int32_t(0xffffe000u));
  const auto smallest_normal = hn::Set(df, 0x1p-14f), overflow = hn::Set(df, 65520.0f), half = hn::Set(df, 0.5f);
  const auto inf = hn::Set(di, 0x7f800000), canonical_nan = hn::Set(di, 0x7fc00000);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(df, v + i);
    const auto u = hn::BitCast(di, x);
    const auto sign = hn::And(u, sign_bit);
    const auto a_bits = hn::And(u, magnitude);
    const auto a = hn::BitCast(df, a_bits);
    const auto normal = hn::And(hn::Add(hn::Add(a_bits, carry), hn::And(hn::ShiftRight<13>(a_bits), one)), keep);
    const auto subnormal = hn::BitCast(di, hn::Sub(hn::Add(a, half), half));
    auto out = hn::IfThenElse(hn::RebindMask(di, hn::Lt(a, smallest_normal)), subnormal, normal);
    out = hn::IfThenElse(hn::RebindMask(di, hn::Ge(a, overflow)), inf, out);   // infinity too
    out = hn::IfThenElse(hn::Gt(a_bits, inf), canonical_nan, out);              // NaN: fp16 keeps no payload
    hn::StoreU(hn::BitCast(df, hn::Or(out, sign)), df, v + i);
  }
  return i;
}

}  // namespace mb::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb {

HWY_EXPORT(round_bf16_vectors);
HWY_EXPORT(round_fp16_vectors);

void round_to_wire(std::span<float> values, WireDtype wire) {
  float* v = values.data();
  const std::size_t n = values.size();
  switch (wire) {
    case WireDtype::Fp32: return;
    case WireDtype::Bf16:
      for (std::size_t i = HWY_DYNAMIC_DISPATCH(round_bf16_vectors)(v, n); i < n; ++i) v[i] = from_bf16(to_bf16(v[i]));
      return;
    case WireDtype::Fp16:
      for (std::size_t i = HWY_DYNAMIC_DISPATCH(round_fp16_vectors)(v, n); i < n; ++i) v[i] = from_fp16(to_fp16(v[i]));
      return;
  }
}

}  // namespace mb
#endif  // HWY_ONCE

// Float <-> bfloat16 / binary16 with round-to-nearest-even (see wire_format.h). The fp16
// rounding follows Fabian Giesen's float_to_half_fast3_rtne (public domain): normal results
// round by integer carry, subnormal ones by one float addition, which the FPU rounds to
// nearest even (the default mode; no -ffast-math in this project).
#include "comm/wire_format.h"

#include <bit>

#include "util/error.h"

namespace mb {

uint16_t to_bf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);   // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);   // ties to the even upper half
  return static_cast<uint16_t>(u >> 16);
}

float from_bf16(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

uint16_t to_fp16(float x) {
  constexpr uint32_t kF32Inf = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;   // 65536: from here on, infinity
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t out;
  if (u >= kF16Overflow) {
    out = u > kF32Inf ? 0x7e00u : 0x7c00u;                 // NaN stays NaN; the rest overflows
  } else if (u < (113u << 23)) {                           // below 2^-14: subnormal or zero
    const float shifted = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
    out = std::bit_cast<uint32_t>(shifted) - kDenormMagic;
  } else {
    const uint32_t mantissa_odd = (u >> 13) & 1u;
    u += (uint32_t(15 - 127) << 23) + 0xfffu;              // rebias the exponent, round half up ...
    u += mantissa_odd;                                     // ... or to even on a tie
    out = u >> 13;
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

float from_fp16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {   // zero or subnormal: mantissa x 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

std::size_t wire_bytes(WireDtype wire) { return wire == WireDtype::Fp32 ? sizeof(float) : sizeof(uint16_t); }

void pack_wire(std::span<const float> values, WireDtype wire, uint16_t* out) {
  MB_CHECK(wire != WireDtype::Fp32, Error, "pack_wire: FP32 travels unpacked");
  if (wire == WireDtype::Bf16)
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_bf16(values[i]);
  else
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_fp16(values[i]);
}

void unpack_wire(const uint16_t* in, WireDtype wire, std::span<float> values) {
  MB_CHECK(wire != WireDtype::Fp32, Error, "unpack_wire: FP32 travels unpacked");
  if (wire == WireDtype::Bf16)
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = from_bf16(in[i]);
  else
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = from_fp16(in[i]);
}

}  // namespace mb

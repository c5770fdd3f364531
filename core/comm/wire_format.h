// The 16-bit formats a compressed gradient all-reduce sends (--allreduce-dtype): IEEE binary16
// (fp16) and bfloat16, converted with round-to-nearest-even as hardware converts them
// (F16C's vcvtps2ph, NCCL's and PyTorch's casts). Portable integer arithmetic, so every host
// rounds every value the same way, whatever its instruction set.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "config/scenario.h"

namespace mb {

uint16_t to_bf16(float x);     // round to nearest even; NaN stays a (quiet) NaN
float from_bf16(uint16_t h);   // exact
uint16_t to_fp16(float x);     // round to nearest even, subnormals included; beyond 65504 rounds to infinity
float from_fp16(uint16_t h);   // exact

// The largest finite fp16 value.
inline constexpr float kFp16Max = 65504.0f;

// Bytes one gradient value takes on the wire, and what an FP32 gradient of `fp32_bytes` puts
// on it (what the breakdown, a simulated link and the predictor count).
std::size_t wire_bytes(WireDtype wire);
inline double bytes_on_wire(double fp32_bytes, WireDtype wire) {
  return fp32_bytes * double(wire_bytes(wire)) / double(sizeof(float));
}

// Each value replaced by the nearest value `wire` can carry (FP32: unchanged). Idempotent.
void round_to_wire(std::span<float> values, WireDtype wire);
// Packing for a link that moves bytes: values must already be representable (round_to_wire),
// so packing and unpacking are lossless.
void pack_wire(std::span<const float> values, WireDtype wire, uint16_t* out);
void unpack_wire(const uint16_t* in, WireDtype wire, std::span<float> values);

}  // namespace mb

// Images into the engine's input: uint8 pixels -> float x/255, a vector at a time (Highway).
#pragma once
#include <cstddef>
#include <cstdint>

namespace mb::onednn {

// dst[i] = float(src[i]) / 255.0f for i < n: IEEE division is correctly rounded, so every SIMD
// target computes the bits of the reference's scalar x/255 (a multiplication by 1/255 would not).
void scale_pixels(const uint8_t* src, float* dst, std::size_t n);

}  // namespace mb::onednn

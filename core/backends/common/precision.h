// Arithmetic precision of a run: FP32 everywhere (the default, what the tests compare with the
// reference), or TF32 tensor cores for the GPU's convolutions and GEMMs (10-bit mantissas in
// the products, FP32 accumulation), for speed. CPU engines compute in FP32 only.
#pragma once
#include <string>
#include <string_view>

namespace mb {

enum class Precision { Fp32, Tf32 };

// "fp32" / "tf32"; throws ConfigError naming --precision for anything else.
Precision parse_precision(std::string_view text);
std::string to_string(Precision p);

}  // namespace mb

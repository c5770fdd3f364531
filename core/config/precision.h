// Arithmetic precision of a run: FP32 everywhere (the default, what the tests compare with the
// reference), or TF32 tensor cores for the GPU's convolutions and GEMMs (10-bit mantissas in
// the products, FP32 accumulation), for speed. CPU engines compute in FP32 only (the backend
// registry says which backend supports which).
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace mb {

enum class Precision { Fp32, Tf32 };

inline constexpr Precision kAllPrecisions[] = {Precision::Fp32, Precision::Tf32};

std::string_view to_string(Precision p);                        // "fp32" / "tf32"
std::optional<Precision> parse_precision(std::string_view text);  // nullopt for anything else

}  // namespace mb

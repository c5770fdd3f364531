// The Adam step of the oneDNN engine: adam_update_reference's exact arithmetic (same operations,
// same order, no fused multiply-add), a vector at a time on every instruction set (Highway).
#pragma once
#include <cstdint>
#include <span>

#include "optim/adam.h"

namespace mb::onednn {

// Bit-identical to adam_update_reference on every SIMD target (IEEE sqrt and division are
// correctly rounded, and nothing is contracted into an FMA), so CPU replicas, in one process
// or in processes on machines of different ISA, and the reference agree exactly.
void adam_update(const AdamConfig& cfg, int64_t step, std::span<float> weights, std::span<const float> grads,
                 std::span<float> m, std::span<float> v);

}  // namespace mb::onednn

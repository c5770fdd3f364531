// Keras's default initialisation: Glorot-uniform kernels, zero biases, drawn tensor by tensor in
// the flat buffer's order from one seeded stream, so a seed gives the same weights everywhere.
#pragma once
#include <cstdint>
#include <span>

#include "model/model_spec.h"

namespace mb {

// `params` must hold model.param_count() floats (else Error).
void init_params(const ModelSpec& model, std::span<float> params, uint64_t seed);

}  // namespace mb

// Glorot-uniform kernels, zero biases.
#include "model/init_params.h"

#include <cmath>

#include "util/error.h"
#include "util/random.h"

namespace mb {

void init_params(const ModelSpec& model, std::span<float> params, uint64_t seed) {
  MB_CHECK(params.size() == model.param_count(), Error, "parameter buffer holds {} floats, the model ({}) needs {}",
           params.size(), model.name(), model.param_count());
  SplitMix64 rng(seed);
  for (const ParamTensor& p : model.shape().params) {
    float* dst = params.data() + p.offset;
    if (p.fan_in == 0) {
      for (std::size_t i = 0; i < p.size; ++i) dst[i] = 0.0f;
      continue;
    }
    const double limit = std::sqrt(6.0 / (p.fan_in + p.fan_out));
    for (std::size_t i = 0; i < p.size; ++i) dst[i] = static_cast<float>((2.0 * rng.next_unit() - 1.0) * limit);
  }
}

}  // namespace mb

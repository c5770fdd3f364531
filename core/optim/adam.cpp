// Adam, Keras form: the plain reference update every backend's Adam is tested against.
// The formula is documented in optim/adam.h; this file follows it line by line.
#include "optim/adam.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace mb {

float adam_step_size(const AdamConfig& cfg, int64_t step) {
  MB_CHECK(step >= 1, ConfigError, "Adam step counts from 1, got {}", step);
  // Double on the host so every replica and backend feeds the identical float to its kernel;
  // b^t in float would lose most of (1 - b2^t) for small t.
  const double t = static_cast<double>(step);
  const double b1 = cfg.beta1, b2 = cfg.beta2;
  const double lr_t = static_cast<double>(cfg.lr) * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
  return static_cast<float>(lr_t);
}

void adam_update_reference(const AdamConfig& cfg, int64_t step, std::span<float> weights,
                           std::span<const float> grads, std::span<float> m, std::span<float> v) {
  MB_CHECK(grads.size() == weights.size() && m.size() == weights.size() && v.size() == weights.size(), Error,
           "Adam buffers differ in length: weights {}, grads {}, m {}, v {}", weights.size(), grads.size(),
           m.size(), v.size());
  const float lr_t = adam_step_size(cfg, step);
  const float b1 = cfg.beta1, b2 = cfg.beta2, eps = cfg.epsilon;
  const float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const float g = grads[i];
    m[i] = b1 * m[i] + one_minus_b1 * g;
    v[i] = b2 * v[i] + one_minus_b2 * g * g;
    weights[i] -= lr_t * m[i] / (std::sqrt(v[i]) + eps);
  }
}

void adam_restart(std::span<const float> from, std::span<float> weights, std::span<float> m, std::span<float> v) {
  std::copy(from.begin(), from.end(), weights.begin());
  std::fill(m.begin(), m.end(), 0.0f);
  std::fill(v.begin(), v.end(), 0.0f);
}

}  // namespace mb

// Adam with the Keras defaults, the plain reference every backend's update is tested against.
// Keras form (epsilon outside the bias correction, "epsilon hat"):
//   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2
//   lr_t = lr * sqrt(1 - b2^t) / (1 - b1^t);  w -= lr_t * m / (sqrt(v) + eps)
#pragma once
#include <cstdint>
#include <span>

namespace mb {

struct AdamConfig {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-7f;
};

// The step-dependent scalar shared by all backends (computed in double on the host so every
// replica and backend uses the identical float).
float adam_step_size(const AdamConfig& cfg, int64_t step);  // step counts from 1

// One Adam step over flat buffers of equal length.
void adam_update_reference(const AdamConfig& cfg, int64_t step, std::span<float> weights,
                           std::span<const float> grads, std::span<float> m, std::span<float> v);

// New weights for a fresh optimizer: copies `from` into `weights` and zeroes both moments (a
// host engine's set_params; the step count restarts with the caller's).
void adam_restart(std::span<const float> from, std::span<float> weights, std::span<float> m, std::span<float> v);

}  // namespace mb

// Parameters and comparisons for tests of fast implementations of the reference CNN against
// the reference engine (test_cuda, test_fused_path): header-only, Qt-free.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/cnn_spec.h"
#include "util/tolerance.h"

namespace mb::test {

// Glorot weights with nonzero biases of both signs (zero biases, the Keras initial state,
// would hide a bias added with the wrong channel index), and conv1 channels 0-7 with zero
// weights and a positive bias: every element of those channels is exactly the bias in any
// convolution algorithm, so every 2x2 pooling window there is a 4-way tie. Which element gets
// the gradient decides which image patch enters d(conv1.weight) of those channels, so a
// gradient check tests the reference's tie rule (the first maximum in scan order).
inline std::vector<float> with_biases_and_ties(std::vector<float> params) {
  for (const auto& t : cnn::param_tensors()) {
    if (t.rank != 1) continue;
    for (std::size_t i = 0; i < t.size; ++i)
      params[t.offset + i] = 0.02f * float(1 + i % 5) * (i % 3 == 0 ? -1.0f : 1.0f);
  }
  const auto& w1 = cnn::param_tensors()[cnn::kConv1W];
  const auto& b1 = cnn::param_tensors()[cnn::kConv1B];
  const std::size_t per_channel = w1.size / cnn::kConv1Out;
  for (std::size_t c = 0; c < 8; ++c) {
    std::fill_n(params.begin() + std::ptrdiff_t(w1.offset + c * per_channel), per_channel, 0.0f);
    params[b1.offset + c] = 0.05f;
  }
  return params;
}

// Every parameter tensor of two flat buffers within atol (relative to the tensor's largest
// magnitude in `want`) + rtol; the first failing tensor as a message, or "" when all pass.
inline std::string tensor_mismatch(const std::vector<float>& got, const std::vector<float>& want, double atol_scale,
                                   double rtol, const std::string& what) {
  for (const auto& t : cnn::param_tensors()) {
    std::span<const float> g(got.data() + t.offset, t.size), w(want.data() + t.offset, t.size);
    double scale = 0;
    for (float x : w) scale = std::max(scale, double(std::fabs(x)));
    const WorstElement worst = worst_element(g, w, {atol_scale * std::max(1e-12, scale), rtol});
    if (worst.ratio > 1.0)
      return fmt::format("{} {}[{}]: {:.9g} vs reference {:.9g} ({:.3g}x the tolerance)", what, t.name, worst.index,
                         worst.x, worst.ref, worst.ratio);
  }
  return {};
}

}  // namespace mb::test

// The fused CUDA path on the CPU: the same element and reduction functions (fused_math.h),
// run in loops over host buffers. What the tests compare with the reference engine, and what
// the CUDA kernel lab compares the device's fused kernels with, kernel by kernel.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "backends/fused/fused_math.h"

namespace mb::fused {

// Host activations for up to `capacity` samples, and the argument pack over them.
struct HostActivations {
  HostActivations(int capacity, int hidden);
  std::vector<int32_t> idx;
  std::vector<float> p1, p2, h, dlogits, dh, g2, g1;
  std::vector<uint8_t> a1, a2;
  std::vector<double> sample_stats;
  // params/grads: flat cnn_spec buffers (the dense width `hidden`).
  FusedArgs args(int n, const int32_t* step_idx, float grad_scale, double* stats, const uint8_t* pixels,
                 const uint8_t* labels, const float* params, float* grads, bool backward);
  int hidden;
};

// The flat buffer offsets of each tensor for a dense width `hidden` (cnn_spec's order).
struct ParamOffsets {
  std::size_t w1, b1, w2, b2, fw1, fb1, fw2, fb2, total;
};
ParamOffsets param_offsets(int hidden);
// Points the pack's parameter and gradient pointers into flat buffers.
void bind_params(FusedArgs& a, const float* params, float* grads);

template <typename K>
void emulate_elements(const FusedArgs& a) {
  const int count = K::elements(a);
  for (int e = 0; e < count; ++e) K::run(a, e);
}

// Each term's contributions are formed in float as the device forms them, and summed in
// double: the emulator is the device's reference, so its own sums should not be the larger
// error (the device adds its partials in float, in a fixed tree).
template <typename K>
void emulate_reduction(const FusedArgs& a) {
  const int tiles = K::tiles(a);
  for (int t = 0; t < tiles; ++t) {
    double total[K::kOut] = {};
    const int terms = K::terms(a, t);
    for (int term = 0; term < terms; ++term) {
      float one[K::kOut] = {};
      K::accumulate(a, t, term, one);
      for (int j = 0; j < K::kOut; ++j) total[j] += one[j];
    }
    for (int j = 0; j < K::kOut; ++j) K::finish(a, t, j, static_cast<float>(total[j]));
  }
}

// One kernel of the fused step on the host, as the device runs it (Head adds the statistics).
void emulate_kernel(FusedKernel k, const FusedArgs& a);

// Forward (and with a.dlogits, backward) in the fused kernels' order; adds the statistics.
void emulate_step(const FusedArgs& a);

}  // namespace mb::fused

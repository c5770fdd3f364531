// Shared helpers for the test executables (header-only, small).
#pragma once
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "util/random.h"

namespace mb::test {

// A learnable in-memory data set: each class draws a bright bar at its own position on
// noise, so a few steps of training visibly raise accuracy. Deterministic for a seed.
inline Dataset make_synthetic_dataset(int64_t count, uint64_t seed, std::string name = "synthetic") {
  Dataset d;
  d.name = std::move(name);
  d.count = count;
  d.rows = d.cols = 28;
  d.pixels.resize(static_cast<std::size_t>(count) * 784);
  d.labels.resize(static_cast<std::size_t>(count));
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int label = static_cast<int>(rng.below(10));
    d.labels[i] = static_cast<uint8_t>(label);
    uint8_t* img = d.pixels.data() + i * 784;
    for (int p = 0; p < 784; ++p) img[p] = static_cast<uint8_t>(rng.below(64));
    const int row = 2 + label * 2;
    for (int c = 4; c < 24; ++c) img[row * 28 + c] = static_cast<uint8_t>(192 + rng.below(64));
  }
  return d;
}

inline std::shared_ptr<DataSplit> make_synthetic_split(int64_t n_train, int64_t n_val, uint64_t seed = 7) {
  auto s = std::make_shared<DataSplit>();
  s->name = "synthetic";
  s->dir = "(memory)";
  s->train = make_synthetic_dataset(n_train, seed, "synthetic/train");
  s->val = make_synthetic_dataset(n_val, seed + 1, "synthetic/val");
  return s;
}

// llm.c-style closeness: |a - b| <= atol + rtol * |b|.
inline bool close(double a, double b, double atol, double rtol) { return std::fabs(a - b) <= atol + rtol * std::fabs(b); }

}  // namespace mb::test

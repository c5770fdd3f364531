// Small, portable, seedable random numbers: the same seed gives the same weights and the
// same data order on every compiler and machine (std:: distributions do not promise that).
#pragma once
#include <cstdint>
#include <span>

namespace mb {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double next_unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  uint64_t below(uint64_t n) { return next() % n; }  // bias < 2^-40 for n < 2^24: fine here

 private:
  uint64_t state_;
};

// Fisher-Yates shuffle of `order` driven by `rng`.
template <typename T>
void shuffle(std::span<T> order, SplitMix64& rng) {
  for (std::size_t i = order.size(); i > 1; --i) {
    std::size_t j = static_cast<std::size_t>(rng.below(i));
    T tmp = order[i - 1];
    order[i - 1] = order[j];
    order[j] = tmp;
  }
}

}  // namespace mb

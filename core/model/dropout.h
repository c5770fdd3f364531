// Dropout masks as a pure function of (seed, epoch, sample, layer, element): whichever replica
// computes a sample, in whatever share or order, drops the same elements, so N replicas train
// exactly as one does, and balanced shares and --shares-from replays stay exact. Inverted
// dropout, as Keras: a kept element is scaled by 1 / (1 - rate) in training; validation runs
// without dropout.
#pragma once
#include <cstdint>
#include <span>

namespace mb {

// What makes one epoch's masks differ from another's (the trainer sets it each epoch).
struct DropoutKey {
  uint64_t seed = 0;
  int64_t epoch = 0;
  bool operator==(const DropoutKey&) const = default;
};

namespace dropout_detail {
inline uint64_t mix(uint64_t z) {   // SplitMix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace dropout_detail

// The stream of one sample at one dropout layer; element e is kept when keeps(e).
class DropoutMask {
 public:
  DropoutMask(const DropoutKey& key, int layer, int64_t sample, double rate)
      : base_(dropout_detail::mix(dropout_detail::mix(dropout_detail::mix(key.seed + 0x9E3779B97F4A7C15ull * uint64_t(key.epoch + 1)) ^
                                                      (uint64_t(layer) << 32)) ^
                                  uint64_t(sample))),
        // 24-bit threshold: a drawn u in [0, 2^24) keeps the element when u >= threshold.
        threshold_(uint32_t(rate * double(1u << 24) + 0.5)) {}

  bool keeps(int64_t element) const {
    const uint64_t u = dropout_detail::mix(base_ + 0x9E3779B97F4A7C15ull * uint64_t(element + 1)) >> 40;
    return u >= threshold_;
  }

 private:
  uint64_t base_;
  uint32_t threshold_;
};

// The samples of a batch, for the dropout masks (model/dropout.h): each one's index in its data
// set (empty: 0..n-1) and the epoch's key.
struct SampleKeys {
  std::span<const int32_t> ids;
  DropoutKey key;
  int64_t id(int i) const { return ids.empty() ? i : ids[std::size_t(i)]; }
};

// The factor a kept element is multiplied by: 1 / (1 - rate), rounded to float once.
inline float dropout_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

}  // namespace mb

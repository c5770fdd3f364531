// A labelled synthetic data set of any image shape and class count, so that any model can run
// for speed before data of its shape is at hand: each class is a seeded smooth template, each
// image its class's template under heavy noise, and one label in ten drawn at random. Learnable
// but, like a real data set, not to 100 %: the loss stays away from zero, so the gradients keep
// the sizes real training has (a separable set drove them into subnormal floats within an epoch,
// 20-30 % slower on x86, and timed that instead of the model). Named "synthetic-HxWxC-K": its
// runs never share a baseline with a real data set's, and the window, records and exports say
// what it is. Only integer and exactly rounded double arithmetic: bench/synthetic_images.py
// makes the same images in NumPy, so PyTorch trains on the same set (tests pin both).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/dataset.h"
#include "model/layer.h"

namespace mb {

struct SyntheticSpec {
  ImageShape shape;
  int classes = 10;
  bool operator==(const SyntheticSpec&) const = default;
};

inline constexpr std::string_view kSyntheticPrefix = "synthetic:";

// "synthetic:HxWxC[:CLASSES]" (the --data word) -> its spec; nullopt when `source` is not a
// synthetic source at all; ConfigError naming --data when it is one but malformed.
std::optional<SyntheticSpec> parse_synthetic_source(std::string_view source);
std::string synthetic_source(const SyntheticSpec& spec);   // the canonical word back

// The share of labels drawn at random instead of the image's class (the expected accuracy
// ceiling is 1 - share * (1 - 1/classes)).
inline constexpr double kSyntheticRelabelled = 0.1;

// `count` images of the spec, deterministic for `seed`; the first k of a larger count are the
// k of a smaller one.
Dataset make_synthetic_images(const SyntheticSpec& spec, int64_t count, uint64_t seed, std::string name);

// 60,000 training and 10,000 validation images, fewer when that much would pass 512 MB (the
// same 6:1 split), seeded by the spec alone: every process and every run gets the same set.
DataSplit make_synthetic_split(const SyntheticSpec& spec);

}  // namespace mb

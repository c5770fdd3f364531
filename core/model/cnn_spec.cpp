// Parameter layout and Keras-default initialisation of the reference CNN.
#include "model/cnn_spec.h"

#include <cmath>

#include "util/error.h"
#include "util/random.h"

namespace mb::cnn {
namespace {

constexpr std::array<ParamTensor, kNumParamTensors> make_layout() {
  std::array<ParamTensor, kNumParamTensors> t{{
      {"conv1.weight", 4, {kConv1Out, 1, kKernel, kKernel}, 0, 0, 1 * 9, kConv1Out * 9},
      {"conv1.bias", 1, {kConv1Out, 0, 0, 0}, 0, 0, 0, 0},
      {"conv2.weight", 4, {kConv2Out, kConv1Out, kKernel, kKernel}, 0, 0, kConv1Out * 9, kConv2Out * 9},
      {"conv2.bias", 1, {kConv2Out, 0, 0, 0}, 0, 0, 0, 0},
      {"fc1.weight", 2, {kHidden, kFlat, 0, 0}, 0, 0, kFlat, kHidden},
      {"fc1.bias", 1, {kHidden, 0, 0, 0}, 0, 0, 0, 0},
      {"fc2.weight", 2, {kClasses, kHidden, 0, 0}, 0, 0, kHidden, kClasses},
      {"fc2.bias", 1, {kClasses, 0, 0, 0}, 0, 0, 0, 0},
  }};
  std::size_t offset = 0;
  for (auto& p : t) {
    std::size_t n = 1;
    for (int d = 0; d < p.rank; ++d) n *= static_cast<std::size_t>(p.shape[d]);
    p.offset = offset;
    p.size = n;
    offset += n;
  }
  return t;
}

constexpr auto kLayout = make_layout();
static_assert(kLayout[kFc2B].offset + kLayout[kFc2B].size == kParamCount,
              "the reference model has 121,930 parameters");

}  // namespace

const std::array<ParamTensor, kNumParamTensors>& param_tensors() { return kLayout; }

void init_params(std::span<float> params, uint64_t seed) {
  MB_CHECK(params.size() == kParamCount, Error, "parameter buffer holds {} floats, the model needs {}",
           params.size(), kParamCount);
  SplitMix64 rng(seed);
  for (const auto& p : kLayout) {
    float* dst = params.data() + p.offset;
    if (p.fan_in == 0) {
      for (std::size_t i = 0; i < p.size; ++i) dst[i] = 0.0f;
      continue;
    }
    const double limit = std::sqrt(6.0 / (p.fan_in + p.fan_out));
    for (std::size_t i = 0; i < p.size; ++i)
      dst[i] = static_cast<float>((2.0 * rng.next_unit() - 1.0) * limit);
  }
}

double train_flops_per_image() {
  // Multiply-adds x 2. Forward of each layer, backward = grad-input + grad-weight
  // (no grad-input for conv1: nothing below it needs one).
  const double conv1 = 2.0 * kConv1Side * kConv1Side * kConv1Out * 9;
  const double conv2 = 2.0 * kConv2Side * kConv2Side * kConv2Out * kConv1Out * 9;
  const double fc1 = 2.0 * kFlat * kHidden;
  const double fc2 = 2.0 * kHidden * kClasses;
  return conv1 * 2 + (conv2 + fc1 + fc2) * 3;
}

}  // namespace mb::cnn

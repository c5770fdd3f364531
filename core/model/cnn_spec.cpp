// Parameter layout and Keras-default initialisation of the reference CNN.
#include "model/cnn_spec.h"

#include <cmath>

#include "util/error.h"
#include "util/random.h"

namespace mb::cnn {
namespace {

constexpr ParamLayout make_layout(int hidden) {
  std::array<ParamTensor, kNumParamTensors> t{{
      {"conv1.weight", 4, {kConv1Out, 1, kKernel, kKernel}, 0, 0, 1 * 9, kConv1Out * 9},
      {"conv1.bias", 1, {kConv1Out, 0, 0, 0}, 0, 0, 0, 0},
      {"conv2.weight", 4, {kConv2Out, kConv1Out, kKernel, kKernel}, 0, 0, kConv1Out * 9, kConv2Out * 9},
      {"conv2.bias", 1, {kConv2Out, 0, 0, 0}, 0, 0, 0, 0},
      {"fc1.weight", 2, {hidden, kFlat, 0, 0}, 0, 0, kFlat, hidden},
      {"fc1.bias", 1, {hidden, 0, 0, 0}, 0, 0, 0, 0},
      {"fc2.weight", 2, {kClasses, hidden, 0, 0}, 0, 0, hidden, kClasses},
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

constexpr auto kLayout = make_layout(kReferenceHidden);
static_assert(kLayout[kFc2B].offset + kLayout[kFc2B].size == kReferenceParams,
              "the reference model has 121,930 parameters");
static_assert(make_layout(4096)[kFc2B].offset + make_layout(4096)[kFc2B].size == std::size_t(param_count(4096)),
              "the layout and param_count agree");

}  // namespace

ParamLayout param_layout(int hidden) { return make_layout(hidden); }
const ParamLayout& param_tensors() { return kLayout; }

void init_params(std::span<float> params, uint64_t seed, int hidden) {
  MB_CHECK(params.size() == std::size_t(param_count(hidden)), Error,
           "parameter buffer holds {} floats, the model (dense {}) needs {}", params.size(), hidden,
           param_count(hidden));
  SplitMix64 rng(seed);
  for (const auto& p : make_layout(hidden)) {
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

double train_flops_per_image(int hidden) {
  // Multiply-adds x 2. Forward of each layer, backward = grad-input + grad-weight
  // (no grad-input for conv1: nothing below it needs one).
  const double conv1 = 2.0 * kConv1Side * kConv1Side * kConv1Out * 9;
  const double conv2 = 2.0 * kConv2Side * kConv2Side * kConv2Out * kConv1Out * 9;
  const double fc1 = 2.0 * kFlat * hidden;
  const double fc2 = 2.0 * hidden * kClasses;
  return conv1 * 2 + (conv2 + fc1 + fc2) * 3;
}

}  // namespace mb::cnn

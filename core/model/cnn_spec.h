// The CNN: conv32-pool-conv64-pool-dense{N}-dense10 (N = 64: the reference experiment's;
// model/model_spec.h describes the width).
// Every backend stores the parameters in ONE flat float buffer laid out as below, in
// PyTorch's layouts (conv OIHW, dense [out, in], flatten in C,H,W order), so gradients
// are all-reduced as one buffer and checkpoints load straight into torch.nn modules.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "model/cnn_shape.h"

namespace mb::cnn {

enum ParamId : int { kConv1W, kConv1B, kConv2W, kConv2B, kFc1W, kFc1B, kFc2W, kFc2B, kNumParamTensors };

struct ParamTensor {
  std::string_view name;          // PyTorch state_dict name, e.g. "conv1.weight"
  int rank;
  std::array<int64_t, 4> shape;   // first `rank` entries used
  std::size_t offset;             // in floats, into the flat buffer
  std::size_t size;               // element count
  int fan_in, fan_out;            // for Glorot-uniform (0 for biases)
};

using ParamLayout = std::array<ParamTensor, kNumParamTensors>;

// The layout for a dense width (the conv tensors' offsets do not depend on it).
ParamLayout param_layout(int hidden);
const ParamLayout& param_tensors();   // the reference model's (width kReferenceHidden)

// The reference model's parameter count, for code that is about the reference model only
// (tests, kernel benches); everything a run sizes asks its ModelSpec.
inline constexpr std::size_t kReferenceParams = static_cast<std::size_t>(kReferenceParamCount);

// Keras defaults: Glorot-uniform kernels, zero biases. Deterministic for a given seed.
// The width follows from the buffer's size (param_count(hidden) floats).
void init_params(std::span<float> params, uint64_t seed, int hidden = kReferenceHidden);

// Forward + backward FLOPs per image (the arithmetic a training step needs).
double train_flops_per_image(int hidden = kReferenceHidden);

}  // namespace mb::cnn

// The reference experiment's CNN, fixed: conv32-pool-conv64-pool-dense64-dense10.
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

const std::array<ParamTensor, kNumParamTensors>& param_tensors();

inline constexpr std::size_t kParamCount = 121930;   // asserted against param_tensors()

// Keras defaults: Glorot-uniform kernels, zero biases. Deterministic for a given seed.
void init_params(std::span<float> params, uint64_t seed);

// Forward + backward FLOPs per image (the arithmetic a training step needs).
double train_flops_per_image();

}  // namespace mb::cnn

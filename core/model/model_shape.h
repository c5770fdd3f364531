// Everything that follows from a model's layer list, inferred once (infer_shape): each layer's
// input and output shape and name, the flat parameter buffer's layout in PyTorch's layouts
// (conv OIHW, dense [out, in], flatten in C, H, W order: gradients are all-reduced as one buffer
// and checkpoints load straight into torch.nn modules), the parameter count, the arithmetic of
// a training step and the memory a replica needs.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/layer.h"

namespace mb {

struct ParamTensor {
  std::string name;               // PyTorch state_dict name: "conv1.weight", "fc2.bias"
  int rank = 0;
  std::array<int64_t, 4> shape{}; // first `rank` entries used
  std::size_t offset = 0;         // in floats, into the flat buffer
  std::size_t size = 0;           // element count
  int fan_in = 0, fan_out = 0;    // for Glorot-uniform (0 for biases)
  int layer = 0;                  // index of its layer
};

struct LayerShape {
  Layer layer;
  std::string name;               // "conv1", "pool1", "fc1", "drop1", "gap", "flatten"
  ImageShape in, out;             // per sample
  bool flat_in = false;           // the input is a vector (after Flatten, Dense, GAP): a Dense reads it as is
  bool flat_out = false;
  int weight = -1, bias = -1;     // indices into ModelShape::params, -1: none
  std::size_t param_count = 0;
  double macs = 0;                // forward multiply-adds per sample
  bool needs_input_grad = false;  // a layer below has parameters: backward must give d(input)
};

struct ModelShape {
  ImageShape input;
  int classes = 0;                // the last Dense's units
  std::vector<LayerShape> layers;
  std::vector<ParamTensor> params;   // in layer order, weight before bias
  std::size_t param_count = 0;
  double train_flops_per_image = 0;  // forward, and backward's weight and (where needed) data gradients
  int64_t activation_floats_per_image = 0;   // the input and every layer's output

  double gradient_bytes() const { return double(param_count) * sizeof(float); }   // per all-reduce
  // What one replica holds at a batch: parameters, gradients and Adam's two moments, plus the
  // activations and their gradients of one step (the engines' own workspaces come on top).
  double memory_bytes(int64_t batch) const;
};

// Limits a layer list must keep (ConfigError beyond them): sizes the engines are tested on and
// a replica can hold.
inline constexpr int kMaxImageSide = 1024;
inline constexpr int kMaxChannels = 64;
inline constexpr int kMaxFilters = 4096;
inline constexpr int kMaxUnits = 16384;          // the widest dense layer in the field's reports (tensorflow#103564)
inline constexpr int kMaxClasses = 256;          // labels are bytes
inline constexpr int kMaxKernel = 7;
inline constexpr std::size_t kMaxParams = std::size_t(1) << 28;   // 1 GiB of floats per copy

// Checks `layers` on `input` and infers every shape. Throws ConfigError naming the layer (its
// position from 1 and its text) and why: a kernel larger than its input, a pooling of a
// 1-pixel side, a convolution after the model was flattened, a last layer that is not a
// linear Dense with at least two units, limits above.
ModelShape infer_shape(const ImageShape& input, const std::vector<Layer>& layers);

}  // namespace mb

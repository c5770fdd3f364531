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

namespace mb::cnn {

inline constexpr int kImageSide = 28;                     // input 1 x 28 x 28
inline constexpr int kImagePixels = kImageSide * kImageSide;
inline constexpr int kClasses = 10;
inline constexpr int kKernel = 3;                         // 3x3 valid convolutions
inline constexpr int kConv1Out = 32;
inline constexpr int kConv1Side = kImageSide - kKernel + 1;   // 26
inline constexpr int kPool1Side = kConv1Side / 2;             // 13
inline constexpr int kConv2Out = 64;
inline constexpr int kConv2Side = kPool1Side - kKernel + 1;   // 11
inline constexpr int kPool2Side = kConv2Side / 2;             // 5 (floor, as Keras 'valid')
inline constexpr int kFlat = kConv2Out * kPool2Side * kPool2Side;  // 1600
inline constexpr int kHidden = 64;

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

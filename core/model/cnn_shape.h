// The CNN's layer shapes as plain constants (the dense width: a value, see below), apart from cnn_spec.h so that CUDA
// sources (compiled as C++17 by nvcc under Debian's CMake, no std::span) can include them.
#pragma once

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
// The dense layer's width is a run-time value (model/model_spec.h: what-if models vary it
// only); the reference CNN's is this one. Parameters: 18,826 + 1,611 * width.
inline constexpr int kReferenceHidden = 64;
inline constexpr long long param_count(int hidden) {
  return (kConv1Out * kKernel * kKernel + kConv1Out) + (kConv2Out * kConv1Out * kKernel * kKernel + kConv2Out) +
         (static_cast<long long>(hidden) * kFlat + hidden) + (static_cast<long long>(kClasses) * hidden + kClasses);
}
inline constexpr long long kReferenceParamCount = param_count(kReferenceHidden);
static_assert(kReferenceParamCount == 121930, "the reference model has 121,930 parameters");
static_assert(param_count(0) == 18826 && param_count(1) - param_count(0) == 1611, "18,826 + 1,611 * width");

}  // namespace mb::cnn

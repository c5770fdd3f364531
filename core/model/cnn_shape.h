// The reference CNN's layer shapes as plain constants, apart from cnn_spec.h so that CUDA
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
inline constexpr int kHidden = 64;

}  // namespace mb::cnn

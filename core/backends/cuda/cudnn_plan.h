// cuDNN descriptors and algorithm choices for the two convolutions at one batch size (pooling
// is an own kernel, kernels.h). Built once per distinct batch size (training share, last partial batch,
// evaluation chunks) and cached by the engine; never built during graph capture.
#pragma once
#include <cstddef>

#include "backends/cuda/cuda_raii.h"
#include "config/precision.h"

namespace mb::cuda {

// The batch-independent descriptors, shared by every plan of one engine.
struct ConvShapes {
  FilterDesc w1, w2;     // conv1 32x1x3x3, conv2 64x32x3x3 (OIHW = cuDNN's KCRS, NCHW format)
  ConvDesc conv;         // 3x3 valid, stride 1, cross-correlation (PyTorch's conv)
  Precision precision = Precision::Fp32;   // fp32: FMA math only; tf32: tensor-op math allowed
  static ConvShapes make(Precision precision);
};

struct ConvPlan {
  int n = 0;
  TensorDesc x, a1, p1, a2, p2;     // 1x28x28, 32x26x26, 32x13x13, 64x11x11, 64x5x5
  cudnnConvolutionFwdAlgo_t fwd1{}, fwd2{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter1{}, bwd_filter2{};
  cudnnConvolutionBwdDataAlgo_t bwd_data2{};
  std::size_t workspace_bytes = 0;  // the largest any of the five algorithms needs
};

// Heuristic algorithm choice (cudnnGet*_v7: no trial runs, no allocations), preferring
// deterministic algorithms whose workspace query succeeds; in FP32, never a TF32 one.
// NCHW in both precisions: the filters live in the flat parameter buffer as OIHW (PyTorch's
// layout), and NHWC tensor-op kernels would want KRSC filters, a transpose each step.
ConvPlan make_conv_plan(cudnnHandle_t handle, const ConvShapes& shapes, int n);

}  // namespace mb::cuda

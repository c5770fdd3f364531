// cuDNN descriptors and algorithm choices for the two convolutions at one batch size (pooling
// is an own kernel, kernels.h). Built once per distinct batch size (training share, last
// partial batch, evaluation chunks) and cached by the cudnn path; never built during capture.
// A plan starts with the heuristic's first allowed candidate for each of its five passes; the
// warm-up then measures the candidates and sets the one every rank agreed on (choose()).
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "backends/common/conv_algo_policy.h"
#include "backends/cuda/cuda_raii.h"
#include "config/precision.h"
#include "util/engine_report.h"

namespace mb::cuda {

// The batch-independent descriptors, shared by every plan of one engine.
struct ConvShapes {
  FilterDesc w1, w2;                      // conv1 32x1x3x3, conv2 64x32x3x3 (OIHW = cuDNN's KCRS, NCHW format)
  ConvDesc conv;                          // 3x3 valid, stride 1, cross-correlation (PyTorch's conv)
  Precision precision = Precision::Fp32;  // fp32: FMA math only; tf32: tensor-op math allowed
  static ConvShapes make(Precision precision);
};

// The five library convolution passes of a step (conv1 needs no input gradient).
enum ConvPass : int { kFwd1, kFwd2, kBwdFilter1, kBwdFilter2, kBwdData2, kConvPasses };
const char* conv_pass_name(int pass);            // "conv1 forward", ...
std::string conv_algo_name(int pass, int algo);  // "IMPLICIT_PRECOMP_GEMM", ...

struct ConvPlan {
  int n = 0;
  TensorDesc x, a1, p1, a2, p2;                               // 1x28x28, 32x26x26, 32x13x13, 64x11x11, 64x5x5
  std::array<std::vector<AlgoInfo>, kConvPasses> candidates;  // allowed, heuristic order
  std::array<int, kConvPasses> algo{};                        // the chosen, per pass
  std::array<std::string, kConvPasses> chosen_by;             // "heuristic" | "measured"
  std::array<float, kConvPasses> time_us{};                   // measured, or -1
  std::size_t workspace_bytes = 0;                            // what the chosen algorithms need (the largest)
  std::size_t candidate_workspace = 0;                        // what any candidate needs (the measurement's)

  // Takes candidate `algo` for `pass` (it must be a candidate) and updates workspace_bytes.
  void choose(int pass, int algo, const char* by, float time_us);
  const AlgoInfo& chosen(int pass) const;
  ConvChoice report(int pass) const;

  cudnnConvolutionFwdAlgo_t fwd(int pass) const { return static_cast<cudnnConvolutionFwdAlgo_t>(algo[pass]); }
  cudnnConvolutionBwdFilterAlgo_t bwd_filter(int pass) const {
    return static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo[pass]);
  }
  cudnnConvolutionBwdDataAlgo_t bwd_data() const { return static_cast<cudnnConvolutionBwdDataAlgo_t>(algo[kBwdData2]); }
};

// The heuristic's rankings (cudnnGet*_v7: no trial runs, no allocations), filtered by
// allowed_candidates: deterministic algorithms whose workspace query succeeds; in FP32, never
// a tensor-op (TF32) one. NCHW in both precisions: the filters live in the flat parameter
// buffer as OIHW (PyTorch's layout), and NHWC tensor-op kernels would want KRSC filters, a
// transpose each step. Each pass starts with its first candidate.
ConvPlan make_conv_plan(cudnnHandle_t handle, const ConvShapes& shapes, int n);

// cuDNN's math type by meaning, and back.
MathKind math_kind(cudnnMathType_t m);

}  // namespace mb::cuda

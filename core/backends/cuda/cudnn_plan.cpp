// cuDNN descriptors and heuristic algorithm selection for one batch size.
#include "backends/cuda/cudnn_plan.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

// Beyond this a workspace is not worth it for a model this small.
constexpr std::size_t kMaxWorkspace = std::size_t(256) << 20;

bool is_tf32(cudnnMathType_t m) { return m == CUDNN_TENSOR_OP_MATH || m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION; }

// Walks the heuristic's ranking with relaxing demands: deterministic first (results run to
// run identical), then anything that reports success. In FP32 a TF32 algorithm is never taken
// (results comparable with the CPU reference); in TF32 the heuristic, asked with tensor-op
// math, already ranks the tensor-core algorithms first. The workspace query doubles as a
// support check.
template <typename Perf, typename WorkspaceOf>
auto choose(const std::vector<Perf>& perfs, int returned, WorkspaceOf workspace_of, std::size_t& workspace,
            const char* what, int n, Precision precision) -> decltype(perfs[0].algo) {
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < returned; ++i) {
      const Perf& p = perfs[i];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      if (precision == Precision::Fp32 && is_tf32(p.mathType)) continue;
      if (pass < 1 && p.determinism != CUDNN_DETERMINISTIC) continue;
      std::size_t bytes = 0;
      if (workspace_of(p.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxWorkspace) continue;
      workspace = std::max(workspace, bytes);
      return p.algo;
    }
  }
  throw DeviceError(fmt::format("cuDNN offers no usable {} algorithm at batch size {}", what, n));
}

cudnnConvolutionFwdAlgo_t choose_forward(cudnnHandle_t h, const ConvShapes& s, cudnnTensorDescriptor_t x,
                                         cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y, std::size_t& ws,
                                         const char* what, int n) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, s.conv.get(), y, static_cast<int>(perfs.size()),
                                                      &returned, perfs.data()));
  return choose(perfs, returned,
                [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
                  return cudnnGetConvolutionForwardWorkspaceSize(h, x, w, s.conv.get(), y, a, bytes);
                },
                ws, what, n, s.precision);
}

cudnnConvolutionBwdFilterAlgo_t choose_backward_filter(cudnnHandle_t h, const ConvShapes& s,
                                                       cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
                                                       cudnnFilterDescriptor_t dw, std::size_t& ws, const char* what,
                                                       int n) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, s.conv.get(), dw,
                                                             static_cast<int>(perfs.size()), &returned, perfs.data()));
  return choose(perfs, returned,
                [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
                  return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x, dy, s.conv.get(), dw, a, bytes);
                },
                ws, what, n, s.precision);
}

cudnnConvolutionBwdDataAlgo_t choose_backward_data(cudnnHandle_t h, const ConvShapes& s, cudnnFilterDescriptor_t w,
                                                   cudnnTensorDescriptor_t dy, cudnnTensorDescriptor_t dx,
                                                   std::size_t& ws, const char* what, int n) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, s.conv.get(), dx, static_cast<int>(perfs.size()),
                                                           &returned, perfs.data()));
  return choose(perfs, returned,
                [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
                  return cudnnGetConvolutionBackwardDataWorkspaceSize(h, w, dy, s.conv.get(), dx, a, bytes);
                },
                ws, what, n, s.precision);
}

}  // namespace

ConvShapes ConvShapes::make(Precision precision) {
  using namespace cnn;
  ConvShapes s;
  s.w1 = make_filter_desc(kConv1Out, 1, kKernel, kKernel);
  s.w2 = make_filter_desc(kConv2Out, kConv1Out, kKernel, kKernel);

  cudnnConvolutionDescriptor_t conv = nullptr;
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  s.conv.reset(conv);
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, /*pad*/ 0, 0, /*stride*/ 1, 1, /*dilation*/ 1, 1,
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // FP32: FMA math only, since TF32 tensor cores would leave the CPU reference's tolerance
  // (10-bit mantissas in the products). TF32 (--precision tf32): tensor-op math, FP32 data.
  s.precision = precision;
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv, precision == Precision::Tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  return s;
}

ConvPlan make_conv_plan(cudnnHandle_t h, const ConvShapes& s, int n) {
  using namespace cnn;
  MB_CHECK(n >= 1, Error, "a cuDNN plan needs a batch of at least 1, got {}", n);
  ConvPlan p;
  p.n = n;
  p.x = make_tensor_desc(n, 1, kImageSide, kImageSide);
  p.a1 = make_tensor_desc(n, kConv1Out, kConv1Side, kConv1Side);
  p.p1 = make_tensor_desc(n, kConv1Out, kPool1Side, kPool1Side);
  p.a2 = make_tensor_desc(n, kConv2Out, kConv2Side, kConv2Side);
  p.p2 = make_tensor_desc(n, kConv2Out, kPool2Side, kPool2Side);

  // cuDNN must agree with the spec's shapes (valid 3x3 convolutions); the pooled shapes
  // (floor: 26 -> 13, 11 -> 5) are the own pooling kernel's, fixed by cnn_spec.
  int dims[4] = {0, 0, 0, 0};
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv.get(), p.x.get(), s.w1.get(), &dims[0], &dims[1],
                                                    &dims[2], &dims[3]));
  MB_CHECK(dims[0] == n && dims[1] == kConv1Out && dims[2] == kConv1Side && dims[3] == kConv1Side, DeviceError,
           "cuDNN computes conv1's output as {}x{}x{}x{}, the model needs {}x{}x{}x{}", dims[0], dims[1], dims[2],
           dims[3], n, kConv1Out, kConv1Side, kConv1Side);
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv.get(), p.p1.get(), s.w2.get(), &dims[0], &dims[1],
                                                    &dims[2], &dims[3]));
  MB_CHECK(dims[0] == n && dims[1] == kConv2Out && dims[2] == kConv2Side && dims[3] == kConv2Side, DeviceError,
           "cuDNN computes conv2's output as {}x{}x{}x{}, the model needs {}x{}x{}x{}", dims[0], dims[1], dims[2],
           dims[3], n, kConv2Out, kConv2Side, kConv2Side);
  static_assert(kPool1Side == kConv1Side / 2 && kPool2Side == kConv2Side / 2, "floor pooling");

  p.fwd1 = choose_forward(h, s, p.x.get(), s.w1.get(), p.a1.get(), p.workspace_bytes, "conv1 forward", n);
  p.fwd2 = choose_forward(h, s, p.p1.get(), s.w2.get(), p.a2.get(), p.workspace_bytes, "conv2 forward", n);
  p.bwd_filter1 =
      choose_backward_filter(h, s, p.x.get(), p.a1.get(), s.w1.get(), p.workspace_bytes, "conv1 weight-gradient", n);
  p.bwd_filter2 =
      choose_backward_filter(h, s, p.p1.get(), p.a2.get(), s.w2.get(), p.workspace_bytes, "conv2 weight-gradient", n);
  p.bwd_data2 =
      choose_backward_data(h, s, s.w2.get(), p.a2.get(), p.p1.get(), p.workspace_bytes, "conv2 input-gradient", n);
  return p;
}

}  // namespace mb::cuda

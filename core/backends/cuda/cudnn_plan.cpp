// cuDNN descriptors, candidate algorithms and the chosen one per pass for one batch size.
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

// One pass's ranking as AlgoInfo, the workspace query doubling as a support check.
template <typename Perf, typename WorkspaceOf>
std::vector<AlgoInfo> ranking(const std::vector<Perf>& perfs, int returned, WorkspaceOf workspace_of) {
  std::vector<AlgoInfo> out;
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perfs[std::size_t(i)];
    AlgoInfo a;
    a.algo = static_cast<int>(p.algo);
    a.deterministic = p.determinism == CUDNN_DETERMINISTIC;
    a.math = math_kind(p.mathType);
    std::size_t bytes = 0;
    a.supported = p.status == CUDNN_STATUS_SUCCESS && workspace_of(p.algo, &bytes) == CUDNN_STATUS_SUCCESS;
    a.workspace_bytes = bytes;
    out.push_back(a);
  }
  return out;
}

std::vector<AlgoInfo> forward_ranking(cudnnHandle_t h, const ConvShapes& s, cudnnTensorDescriptor_t x,
                                      cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, s.conv.get(), y, static_cast<int>(perfs.size()),
                                                     &returned, perfs.data()));
  return ranking(perfs, returned, [&](cudnnConvolutionFwdAlgo_t a, std::size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, x, w, s.conv.get(), y, a, bytes);
  });
}

std::vector<AlgoInfo> backward_filter_ranking(cudnnHandle_t h, const ConvShapes& s, cudnnTensorDescriptor_t x,
                                              cudnnTensorDescriptor_t dy, cudnnFilterDescriptor_t dw) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, s.conv.get(), dw, static_cast<int>(perfs.size()),
                                                            &returned, perfs.data()));
  return ranking(perfs, returned, [&](cudnnConvolutionBwdFilterAlgo_t a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, x, dy, s.conv.get(), dw, a, bytes);
  });
}

std::vector<AlgoInfo> backward_data_ranking(cudnnHandle_t h, const ConvShapes& s, cudnnFilterDescriptor_t w,
                                            cudnnTensorDescriptor_t dy, cudnnTensorDescriptor_t dx) {
  int max_count = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perfs(static_cast<std::size_t>(std::max(1, max_count)));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, s.conv.get(), dx, static_cast<int>(perfs.size()),
                                                          &returned, perfs.data()));
  return ranking(perfs, returned, [&](cudnnConvolutionBwdDataAlgo_t a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, w, dy, s.conv.get(), dx, a, bytes);
  });
}

}  // namespace

MathKind math_kind(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_FMA_MATH: return MathKind::Fma;
    case CUDNN_TENSOR_OP_MATH: return MathKind::TensorOp;
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return MathKind::TensorOpAllowConversion;
    default:
      return MathKind::Default;
  }
}

const char* conv_pass_name(int pass) {
  switch (pass) {
    case kFwd1: return "conv1 forward";
    case kFwd2: return "conv2 forward";
    case kBwdFilter1: return "conv1 weight gradient";
    case kBwdFilter2: return "conv2 weight gradient";
    case kBwdData2: return "conv2 input gradient";
  }
  return "?";
}

std::string conv_algo_name(int pass, int algo) {
  static const char* const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
                                    "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {"ALGO_0",    "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                       "FFT_TILING"};
  static const char* const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  auto pick = [&](const char* const* names, int count) -> std::string {
    return algo >= 0 && algo < count ? names[algo] : fmt::format("ALGO_{}", algo);
  };
  if (pass == kFwd1 || pass == kFwd2) return pick(fwd, 8);
  if (pass == kBwdFilter1 || pass == kBwdFilter2) return pick(filter, 7);
  return pick(data, 6);
}

void ConvPlan::choose(int pass, int a, const char* by, float us) {
  const auto& c = candidates[std::size_t(pass)];
  MB_CHECK(std::any_of(c.begin(), c.end(), [&](const AlgoInfo& i) { return i.algo == a; }), DeviceError,
           "{} at batch {}: algorithm {} is not one of this replica's candidates", conv_pass_name(pass), n, a);
  algo[std::size_t(pass)] = a;
  chosen_by[std::size_t(pass)] = by;
  time_us[std::size_t(pass)] = us;
  workspace_bytes = 0;
  for (int p = 0; p < kConvPasses; ++p) workspace_bytes = std::max(workspace_bytes, chosen(p).workspace_bytes);
}

const AlgoInfo& ConvPlan::chosen(int pass) const {
  for (const AlgoInfo& i : candidates[std::size_t(pass)])
    if (i.algo == algo[std::size_t(pass)]) return i;
  throw DeviceError(fmt::format("{} at batch {}: no chosen algorithm", conv_pass_name(pass), n));
}

ConvChoice ConvPlan::report(int pass) const {
  const AlgoInfo& a = chosen(pass);
  ConvChoice c;
  c.pass = conv_pass_name(pass);
  c.batch = n;
  c.algo = a.algo;
  c.algo_name = conv_algo_name(pass, a.algo);
  c.math = to_string(a.math);
  c.workspace_bytes = static_cast<int64_t>(a.workspace_bytes);
  c.time_us = time_us[std::size_t(pass)];
  c.chosen_by = chosen_by[std::size_t(pass)];
  return c;
}

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
  // (10-bit mantissas in the products); the descriptor keeps every algorithm on FMA math
  // even when the heuristic lists it with the default math type. TF32 (--precision tf32):
  // tensor-op math, FP32 data.
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
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv.get(), p.x.get(), s.w1.get(), &dims[0], &dims[1], &dims[2],
                                                    &dims[3]));
  MB_CHECK(dims[0] == n && dims[1] == kConv1Out && dims[2] == kConv1Side && dims[3] == kConv1Side, DeviceError,
           "cuDNN computes conv1's output as {}x{}x{}x{}, the model needs {}x{}x{}x{}", dims[0], dims[1], dims[2],
           dims[3], n, kConv1Out, kConv1Side, kConv1Side);
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv.get(), p.p1.get(), s.w2.get(), &dims[0], &dims[1], &dims[2],
                                                    &dims[3]));
  MB_CHECK(dims[0] == n && dims[1] == kConv2Out && dims[2] == kConv2Side && dims[3] == kConv2Side, DeviceError,
           "cuDNN computes conv2's output as {}x{}x{}x{}, the model needs {}x{}x{}x{}", dims[0], dims[1], dims[2],
           dims[3], n, kConv2Out, kConv2Side, kConv2Side);
  static_assert(kPool1Side == kConv1Side / 2 && kPool2Side == kConv2Side / 2, "floor pooling");

  const std::vector<AlgoInfo> rankings[kConvPasses] = {
      forward_ranking(h, s, p.x.get(), s.w1.get(), p.a1.get()),
      forward_ranking(h, s, p.p1.get(), s.w2.get(), p.a2.get()),
      backward_filter_ranking(h, s, p.x.get(), p.a1.get(), s.w1.get()),
      backward_filter_ranking(h, s, p.p1.get(), p.a2.get(), s.w2.get()),
      backward_data_ranking(h, s, s.w2.get(), p.a2.get(), p.p1.get()),
  };
  for (int pass = 0; pass < kConvPasses; ++pass) {
    // Deterministic first (results run to run identical); anything supported only if none is.
    auto c = allowed_candidates(rankings[pass], s.precision, kMaxWorkspace, false);
    if (c.empty()) c = allowed_candidates(rankings[pass], s.precision, kMaxWorkspace, true);
    MB_CHECK(!c.empty(), DeviceError, "cuDNN offers no usable {} algorithm at batch size {}", conv_pass_name(pass), n);
    for (const AlgoInfo& a : c) p.candidate_workspace = std::max(p.candidate_workspace, a.workspace_bytes);
    p.candidates[std::size_t(pass)] = std::move(c);
    p.choose(pass, p.candidates[std::size_t(pass)].front().algo, "heuristic", -1.0f);
  }
  return p;
}

}  // namespace mb::cuda

// The kernel lab: every cuDNN call of the step with the algorithm the engine chose (its
// warm-up measured them; the choices come from its report), and every cuBLAS call, on exact
// inputs against the CPU stages, then timed. In TF32, with the engine's TF32 choices.
#include <fmt/format.h>

#include "backends/cuda/cudnn_plan.h"
#include "lab_device.h"
#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::lab {
namespace {

using namespace cnn;
using cuda::DeviceBuffer;

constexpr float kOne = 1.0f, kZero = 0.0f;

int engine_algo(const std::vector<ConvChoice>& choices, int pass, int n) {
  for (const ConvChoice& c : choices)
    if (c.pass == cuda::conv_pass_name(pass) && c.batch == n) return c.algo;
  return -1;  // the plan's own first candidate then
}

std::vector<float> tensor(const CudnnStages& s, ParamId id) {
  const auto& t = param_tensors()[id];
  return std::vector<float>(s.params.begin() + std::ptrdiff_t(t.offset),
                            s.params.begin() + std::ptrdiff_t(t.offset + t.size));
}

}  // namespace

std::vector<Result> run_library_calls(const CudnnStages& s, const LabOptions& o, Precision precision,
                                      const std::vector<ConvChoice>& engine_choices, cudaStream_t st) {
  const int n = s.n;
  const auto cases = lab_cases(n, precision);
  const std::string suffix = precision == Precision::Tf32 ? " [tf32]" : "";
  std::vector<Result> out;
  auto record = [&](const char* name, const std::vector<std::pair<std::string, Comparison>>& checks, double us) {
    Result r = finish_case(find_case(cases, name), n, checks, us, o.peak);
    r.name += suffix;
    out.push_back(r);
  };

  // ---- cuDNN ----
  cuda::CudnnHandle cudnn = cuda::make_cudnn();
  CUDNN_CHECK(cudnnSetStream(cudnn.get(), st));
  const cuda::ConvShapes shapes = cuda::ConvShapes::make(precision);
  cuda::ConvPlan plan = cuda::make_conv_plan(cudnn.get(), shapes, n);
  for (int pass = 0; pass < cuda::kConvPasses; ++pass) {
    const int a = engine_algo(engine_choices, pass, n);
    if (a >= 0) plan.choose(pass, a, "engine", -1.0f);
  }
  DeviceBuffer<unsigned char> ws(std::max<std::size_t>(1, plan.workspace_bytes));
  auto x = to_device(s.x, st), c1 = to_device(s.c1, st), p1 = to_device(s.p1, st), c2 = to_device(s.c2, st);
  auto w1 = to_device(tensor(s, kConv1W), st), w2 = to_device(tensor(s, kConv2W), st);
  auto dc1 = to_device(s.dc1, st), dc2 = to_device(s.dc2, st);
  DeviceBuffer<float> y1(s.c1.size()), y2(s.c2.size()), dw1(288), dw2(18432), dp1(s.p1.size());
  const auto wsb = ws.bytes();
  auto fwd1 = [&] {
    CUDNN_CHECK(cudnnConvolutionForward(cudnn.get(), &kOne, plan.x.get(), x.get(), shapes.w1.get(), w1.get(),
                                        shapes.conv.get(), plan.fwd(cuda::kFwd1), ws.get(), wsb, &kZero, plan.a1.get(),
                                        y1.get()));
  };
  auto fwd2 = [&] {
    CUDNN_CHECK(cudnnConvolutionForward(cudnn.get(), &kOne, plan.p1.get(), p1.get(), shapes.w2.get(), w2.get(),
                                        shapes.conv.get(), plan.fwd(cuda::kFwd2), ws.get(), wsb, &kZero, plan.a2.get(),
                                        y2.get()));
  };
  auto wgrad1 = [&] {
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn.get(), &kOne, plan.x.get(), x.get(), plan.a1.get(), dc1.get(),
                                               shapes.conv.get(), plan.bwd_filter(cuda::kBwdFilter1), ws.get(), wsb,
                                               &kZero, shapes.w1.get(), dw1.get()));
  };
  auto wgrad2 = [&] {
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn.get(), &kOne, plan.p1.get(), p1.get(), plan.a2.get(), dc2.get(),
                                               shapes.conv.get(), plan.bwd_filter(cuda::kBwdFilter2), ws.get(), wsb,
                                               &kZero, shapes.w2.get(), dw2.get()));
  };
  auto dgrad2 = [&] {
    CUDNN_CHECK(cudnnConvolutionBackwardData(cudnn.get(), &kOne, shapes.w2.get(), w2.get(), plan.a2.get(), dc2.get(),
                                             shapes.conv.get(), plan.bwd_data(), ws.get(), wsb, &kZero, plan.p1.get(),
                                             dp1.get()));
  };
  const auto tol = find_case(cases, "cuDNN conv1 forward").tol;
  auto algo_note = [&](int pass) {
    return fmt::format("{} ({})", plan.report(pass).algo_name, plan.report(pass).math);
  };
  fwd1();
  record("cuDNN conv1 forward", {{algo_note(cuda::kFwd1), compare(to_host(y1.get(), s.c1.size(), st), s.c1, tol)}},
         time_us(st, o.reps, fwd1));
  fwd2();
  record("cuDNN conv2 forward", {{algo_note(cuda::kFwd2), compare(to_host(y2.get(), s.c2.size(), st), s.c2, tol)}},
         time_us(st, o.reps, fwd2));
  wgrad1();
  record("cuDNN conv1 weight gradient",
         {{algo_note(cuda::kBwdFilter1), compare(to_host(dw1.get(), 288, st), s.g_conv1w, tol)}},
         time_us(st, o.reps, wgrad1));
  wgrad2();
  record("cuDNN conv2 weight gradient",
         {{algo_note(cuda::kBwdFilter2), compare(to_host(dw2.get(), 18432, st), s.g_conv2w, tol)}},
         time_us(st, o.reps, wgrad2));
  dgrad2();
  record("cuDNN conv2 input gradient",
         {{algo_note(cuda::kBwdData2), compare(to_host(dp1.get(), s.p1.size(), st), s.dp1, tol)}},
         time_us(st, o.reps, dgrad2));

  // ---- cuBLAS (the cudnn path's three formulas, cudnn_path.cpp) ----
  cuda::CublasHandle blas = cuda::make_cublas();
  CUBLAS_CHECK(cublasSetStream(blas.get(), st));
  CUBLAS_CHECK(
      cublasSetMathMode(blas.get(), precision == Precision::Tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  auto gemm_fwd = [&](const float* xin, const float* w, float* y, int in, int outn) {
    CUBLAS_CHECK(
        cublasSgemm(blas.get(), CUBLAS_OP_T, CUBLAS_OP_N, outn, n, in, &kOne, w, in, xin, in, &kZero, y, outn));
  };
  auto gemm_wgrad = [&](const float* xin, const float* dy, float* dw, int in, int outn) {
    CUBLAS_CHECK(
        cublasSgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_T, in, outn, n, &kOne, xin, in, dy, outn, &kZero, dw, in));
  };
  auto gemm_dgrad = [&](const float* w, const float* dy, float* dx, int in, int outn) {
    CUBLAS_CHECK(
        cublasSgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, in, n, outn, &kOne, w, in, dy, outn, &kZero, dx, in));
  };
  auto p2 = to_device(s.p2, st), h = to_device(s.h, st), dh = to_device(s.dh, st), dl = to_device(s.dlogits, st);
  auto fw1 = to_device(tensor(s, kFc1W), st), fw2 = to_device(tensor(s, kFc2W), st);
  DeviceBuffer<float> hy(s.h_gemm.size()), gw1(s.g_fc1w.size()), dx2(s.dp2.size()), ly(s.logits.size()),
      gw2(s.g_fc2w.size()), dxh(s.dh_gemm.size());
  const auto btol = find_case(cases, "cuBLAS fc1 forward").tol;
  struct Gemm {
    const char* name;
    std::function<void()> run;
    const float* result;
    const std::vector<float>* want;
  };
  const Gemm gemms[] = {
      {"cuBLAS fc1 forward", [&] { gemm_fwd(p2.get(), fw1.get(), hy.get(), kFlat, kReferenceHidden); }, hy.get(), &s.h_gemm},
      {"cuBLAS fc1 weight gradient", [&] { gemm_wgrad(p2.get(), dh.get(), gw1.get(), kFlat, kReferenceHidden); }, gw1.get(),
       &s.g_fc1w},
      {"cuBLAS fc1 input gradient", [&] { gemm_dgrad(fw1.get(), dh.get(), dx2.get(), kFlat, kReferenceHidden); }, dx2.get(),
       &s.dp2},
      {"cuBLAS fc2 forward", [&] { gemm_fwd(h.get(), fw2.get(), ly.get(), kReferenceHidden, kClasses); }, ly.get(), &s.logits},
      {"cuBLAS fc2 weight gradient", [&] { gemm_wgrad(h.get(), dl.get(), gw2.get(), kReferenceHidden, kClasses); }, gw2.get(),
       &s.g_fc2w},
      {"cuBLAS fc2 input gradient", [&] { gemm_dgrad(fw2.get(), dl.get(), dxh.get(), kReferenceHidden, kClasses); }, dxh.get(),
       &s.dh_gemm},
  };
  for (const Gemm& g : gemms) {
    g.run();
    record(g.name, {{"result", compare(to_host(g.result, g.want->size(), st), *g.want, btol)}},
           time_us(st, o.reps, g.run));
  }
  return out;
}

}  // namespace mb::lab

// The kernel lab: every cuDNN call of the step and every cuBLAS call, on exact inputs against
// the CPU stages, then timed, in FP32 and in TF32. No engine is needed: every allowed
// candidate of each convolution pass (the plan's list, the engine's) is run, validated and
// then measured here, and the engine's own rule (choose_algorithms, for one rank) picks the
// algorithm the case is timed with. So any algorithm a run's warm-up could pick has been
// validated, and a failure of the whole-step part (NCCL, capture) cannot take these checks
// with it.
#include <array>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "backends/common/conv_algo_policy.h"
#include "backends/cuda/cudnn_plan.h"
#include "lab_device.h"
#include "model/cnn_spec.h"
#include "util/deadline.h"
#include "util/error.h"

namespace mb::lab {
namespace {

using namespace cnn;
using cuda::DeviceBuffer;

constexpr float kOne = 1.0f, kZero = 0.0f;
constexpr int kMeasureReps = 3;  // timed runs per candidate, as in the engine's warm-up

std::vector<float> tensor(const CudnnStages& s, ParamId id) {
  const auto& t = param_tensors()[id];
  return std::vector<float>(s.params.begin() + std::ptrdiff_t(t.offset),
                            s.params.begin() + std::ptrdiff_t(t.offset + t.size));
}

// The five library convolution passes on the stages' inputs, each into its own output, with
// the plan's current algorithm for the pass.
struct ConvPasses {
  ConvPasses(const CudnnStages& stages, Precision precision, cudaStream_t stream)
      : s(stages),
        st(stream),
        cudnn(cuda::make_cudnn()),
        shapes(cuda::ConvShapes::make(precision)),
        plan(cuda::make_conv_plan(cudnn.get(), shapes, stages.n)),
        ws(std::max<std::size_t>(1, plan.candidate_workspace)) {  // any candidate fits
    CUDNN_CHECK(cudnnSetStream(cudnn.get(), st));
  }

  void run(int pass) {
    const auto b = ws.bytes();
    auto* h = cudnn.get();
    switch (pass) {
      case cuda::kFwd1:
        CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, plan.x.get(), x.get(), shapes.w1.get(), w1.get(),
                                            shapes.conv.get(), plan.fwd(cuda::kFwd1), ws.get(), b, &kZero,
                                            plan.a1.get(), y1.get()));
        return;
      case cuda::kFwd2:
        CUDNN_CHECK(cudnnConvolutionForward(h, &kOne, plan.p1.get(), p1.get(), shapes.w2.get(), w2.get(),
                                            shapes.conv.get(), plan.fwd(cuda::kFwd2), ws.get(), b, &kZero,
                                            plan.a2.get(), y2.get()));
        return;
      case cuda::kBwdFilter1:
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &kOne, plan.x.get(), x.get(), plan.a1.get(), dc1.get(),
                                                   shapes.conv.get(), plan.bwd_filter(cuda::kBwdFilter1), ws.get(),
                                                   b, &kZero, shapes.w1.get(), dw1.get()));
        return;
      case cuda::kBwdFilter2:
        CUDNN_CHECK(cudnnConvolutionBackwardFilter(h, &kOne, plan.p1.get(), p1.get(), plan.a2.get(), dc2.get(),
                                                   shapes.conv.get(), plan.bwd_filter(cuda::kBwdFilter2), ws.get(),
                                                   b, &kZero, shapes.w2.get(), dw2.get()));
        return;
      case cuda::kBwdData2:
        CUDNN_CHECK(cudnnConvolutionBackwardData(h, &kOne, shapes.w2.get(), w2.get(), plan.a2.get(), dc2.get(),
                                                 shapes.conv.get(), plan.bwd_data(), ws.get(), b, &kZero,
                                                 plan.p1.get(), dp1.get()));
        return;
    }
  }
  const std::vector<float>& want(int pass) const {
    const std::vector<float>* w[] = {&s.c1, &s.c2, &s.g_conv1w, &s.g_conv2w, &s.dp1};
    return *w[pass];
  }
  std::vector<float> got(int pass) const {
    const float* out[] = {y1.get(), y2.get(), dw1.get(), dw2.get(), dp1.get()};
    return to_host(out[pass], want(pass).size(), st);
  }

  const CudnnStages& s;
  cudaStream_t st;
  cuda::CudnnHandle cudnn;
  cuda::ConvShapes shapes;
  cuda::ConvPlan plan;
  DeviceBuffer<unsigned char> ws;
  DeviceBuffer<float> x = to_device(s.x, st), p1 = to_device(s.p1, st);
  DeviceBuffer<float> w1 = to_device(tensor(s, kConv1W), st), w2 = to_device(tensor(s, kConv2W), st);
  DeviceBuffer<float> dc1 = to_device(s.dc1, st), dc2 = to_device(s.dc2, st);
  DeviceBuffer<float> y1{s.c1.size()}, y2{s.c2.size()}, dw1{s.g_conv1w.size()}, dw2{s.g_conv2w.size()},
      dp1{s.dp1.size()};
};

// Every candidate of every pass run once and validated, then measured; then the plan takes
// what the engine's rule picks from those timings. Returns each pass's checks, one per
// candidate (named by algorithm and math), and notes for the report.
std::array<Checks, cuda::kConvPasses> validate_candidates(ConvPasses& c, const CaseTolerance& tol,
                                                         std::array<std::string, cuda::kConvPasses>& notes) {
  std::array<Checks, cuda::kConvPasses> checks;
  std::vector<PassTimings> timings(cuda::kConvPasses);
  for (int pass = 0; pass < cuda::kConvPasses; ++pass) {
    PassTimings& t = timings[std::size_t(pass)];
    t.participates = 1;
    const std::vector<AlgoInfo> candidates = c.plan.candidates[std::size_t(pass)];
    int refused = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const int a = candidates[i].algo;
      t.rank_order[std::size_t(a)] = static_cast<int8_t>(i);
      c.plan.choose(pass, a, "measured", -1.0f);
      try {
        c.run(pass);
        checks[std::size_t(pass)].push_back(
            {fmt::format("{} ({})", cuda::conv_algo_name(pass, a), to_string(candidates[i].math)),
             compare(c.got(pass), c.want(pass), tol)});
        t.us[std::size_t(a)] = float(time_us(c.st, kMeasureReps, [&] { c.run(pass); }));
      } catch (const StallError&) {
        throw;  // the device itself is stuck
      } catch (const DeviceError&) {
        // Refused by the library at run time: not a candidate after all (as in the engine).
        t.us[std::size_t(a)] = std::numeric_limits<float>::infinity();
        ++refused;
      }
    }
    notes[std::size_t(pass)] =
        fmt::format("{} candidate(s) validated{}", checks[std::size_t(pass)].size(),
                    refused ? fmt::format(", {} refused at run time", refused) : std::string());
  }
  const std::vector<AgreedAlgo> agreed = choose_algorithms(std::vector<std::vector<PassTimings>>{timings});
  for (int pass = 0; pass < cuda::kConvPasses; ++pass) {
    const AgreedAlgo& a = agreed[std::size_t(pass)];
    if (a.algo >= 0) c.plan.choose(pass, a.algo, a.measured ? "measured" : "heuristic", a.measured ? a.worst_us : -1);
    notes[std::size_t(pass)] += fmt::format("; timed: {} ({})", c.plan.report(pass).algo_name, c.plan.report(pass).math);
  }
  return checks;
}

std::vector<Result> convolution_cases(const CudnnStages& s, const LabOptions& o, Precision precision,
                                      cudaStream_t st) {
  const auto cases = lab_cases(s.n, precision);
  ConvPasses c(s, precision, st);
  std::array<std::string, cuda::kConvPasses> notes;
  const auto checks = validate_candidates(c, find_case(cases, "cuDNN conv1 forward").tol, notes);
  std::vector<Result> out;
  for (int pass = 0; pass < cuda::kConvPasses; ++pass) {
    const CaseSpec& spec = find_case(cases, std::string("cuDNN ") + cuda::conv_pass_name(pass));
    c.run(pass);  // the chosen algorithm, validated above among the candidates
    Result r = validate_then_time(
        spec, s.n, [&] { return checks[std::size_t(pass)]; },
        [&] { return time_us(st, o.reps, [&] { c.run(pass); }); }, o.peak);
    r.detail += "; " + notes[std::size_t(pass)];
    out.push_back(r);
  }
  return out;
}

// The cudnn path's three GEMM formulas (cudnn_path.cpp), for both dense layers.
std::vector<Result> gemm_cases(const CudnnStages& s, const LabOptions& o, Precision precision, cudaStream_t st) {
  const int n = s.n;
  const auto cases = lab_cases(n, precision);
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
  const auto tol = find_case(cases, "cuBLAS fc1 forward").tol;
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
  std::vector<Result> out;
  for (const Gemm& g : gemms) {
    g.run();
    out.push_back(validate_then_time(
        find_case(cases, g.name), n,
        [&] { return Checks{{"result", compare(to_host(g.result, g.want->size(), st), *g.want, tol)}}; },
        [&] { return time_us(st, o.reps, g.run); }, o.peak));
  }
  return out;
}

}  // namespace

std::vector<Result> run_library_calls(const CudnnStages& s, const LabOptions& o, Precision precision,
                                      cudaStream_t st) {
  std::vector<Result> out = convolution_cases(s, o, precision, st);
  const std::vector<Result> gemms = gemm_cases(s, o, precision, st);
  out.insert(out.end(), gemms.begin(), gemms.end());
  if (precision == Precision::Tf32)
    for (Result& r : out) r.name += " [tf32]";
  return out;
}

}  // namespace mb::lab

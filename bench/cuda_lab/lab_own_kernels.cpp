// The kernel lab: the cudnn path's own kernels (backends/cuda/kernels.h) on exact inputs,
// against the CPU stages of lab_cases, then timed.
#include <cmath>

#include <fmt/format.h>

#include "backends/cuda/kernels.h"
#include "lab_device.h"
#include "model/cnn_spec.h"
#include "optim/adam.h"

namespace mb::lab {
namespace {

using namespace cnn;
using cuda::DeviceBuffer;

std::vector<float> host_tensor(const CudnnStages& s, ParamId id) {
  const auto& t = param_tensors()[id];
  return std::vector<float>(s.params.begin() + std::ptrdiff_t(t.offset),
                            s.params.begin() + std::ptrdiff_t(t.offset + t.size));
}

}  // namespace

Result finish_case(const CaseSpec& spec, int n, const std::vector<std::pair<std::string, Comparison>>& checks,
                   double us, const Peak& peak) {
  Result r;
  r.name = spec.name;
  r.group = spec.group;
  r.n = n;
  r.validated = !checks.empty();
  r.passed = true;
  double worst = 0;
  for (const auto& [what, c] : checks) {
    if (!c.passed && r.passed) {
      r.passed = false;
      r.detail = fmt::format("{}: {} element(s) off, worst [{}] {:.9g} vs {:.9g} ({:.3g}x the tolerance: {})", what,
                             c.mismatches, c.worst_index, c.got, c.want, c.worst_ratio, spec.tol.why);
    }
    worst = std::max(worst, c.worst_ratio);
  }
  if (r.passed && r.validated) r.detail = fmt::format("{:.2g}", worst);
  r.time_us = us;
  add_rates(r, spec, peak);
  return r;
}

namespace {

// The cases of one batch share their inputs and the report; each function below runs one
// group of kernels.
struct OwnKernels {
  OwnKernels(const CudnnStages& stages, const LabOptions& options, cudaStream_t stream)
      : s(stages), o(options), st(stream) {}
  const CudnnStages& s;
  const LabOptions& o;
  cudaStream_t st;
  std::vector<CaseSpec> cases = lab_cases(s.n, Precision::Fp32);
  std::vector<Result> out;
  DeviceBuffer<uint8_t> pixels = to_device(s.data.pixels, st), labels8 = to_device(s.data.labels, st);
  DeviceBuffer<int32_t> idx = to_device(s.idx, st);

  CaseSpec spec(const char* name) const { return find_case(cases, name); }
  void forward();
  void loss();
  void backward();
  void optimizer();
};

void OwnKernels::forward() {
  const int n = s.n;
  {  // gather + normalise
    DeviceBuffer<float> x(s.x.size());
    DeviceBuffer<int32_t> lab(static_cast<std::size_t>(n));
    const cuda::GatherArgs a{pixels.get(), labels8.get(), idx.get(), n, x.get(), lab.get()};
    cuda::launch_gather_normalize(a, st);
    const auto c = spec("gather + normalise");
    const auto got = to_host(x.get(), s.x.size(), st);
    const auto got_labels = to_host(lab.get(), std::size_t(n), st);
    const double us = time_us(st, o.reps, [&] { cuda::launch_gather_normalize(a, st); });
    out.push_back(finish_case(c, n, {{"x", compare(got, s.x, c.tol)}, {"labels", compare_ints(got_labels, s.labels)}},
                              us, o.peak));
  }
  // bias + ReLU + pool, both convolutions
  auto pool_case = [&](const char* name, const std::vector<float>& conv, ParamId bias, int ch, int side,
                       const std::vector<float>& p_ref, const std::vector<uint8_t>& a_ref) {
    auto y = to_device(conv, st);
    auto b = to_device(host_tensor(s, bias), st);
    DeviceBuffer<float> p(p_ref.size());
    DeviceBuffer<uint8_t> arg(p_ref.size());
    auto run = [&] { cuda::launch_bias_relu_pool(y.get(), b.get(), p.get(), arg.get(), n, ch, side, side, st); };
    run();
    const auto c = spec(name);
    const auto gp = to_host(p.get(), p_ref.size(), st);
    const auto ga = to_host(arg.get(), a_ref.size(), st);
    out.push_back(finish_case(c, n, {{"pooled", compare(gp, p_ref, c.tol)}, {"argmax", compare_bytes(ga, a_ref, 0)}},
                              time_us(st, o.reps, run), o.peak));
  };
  pool_case("conv1 bias + ReLU + pool", s.c1, kConv1B, kConv1Out, kConv1Side, s.p1, s.a1);
  pool_case("conv2 bias + ReLU + pool", s.c2, kConv2B, kConv2Out, kConv2Side, s.p2, s.a2);

  {  // fc1 bias + ReLU, in place: validated on the first launch
    auto y = to_device(s.h_gemm, st);
    auto b = to_device(host_tensor(s, kFc1B), st);
    cuda::launch_bias_relu(y.get(), b.get(), n, kReferenceHidden, st);
    const auto c = spec("fc1 bias + ReLU");
    const auto got = to_host(y.get(), s.h.size(), st);
    const double us = time_us(st, o.reps, [&] { cuda::launch_bias_relu(y.get(), b.get(), n, kReferenceHidden, st); });
    out.push_back(finish_case(c, n, {{"h", compare(got, s.h, c.tol)}}, us, o.peak));
  }
}

void OwnKernels::loss() {
  const int n = s.n;
  {  // softmax cross-entropy, training (dlogits) and evaluation (statistics only)
    auto logits = to_device(s.logits, st);
    auto b = to_device(host_tensor(s, kFc2B), st);
    auto lab = to_device(s.labels, st);
    DeviceBuffer<float> dl(s.dlogits.size());
    DeviceBuffer<double> partials(std::size_t(cuda::softmax_partials(n))), stats(2);
    DeviceBuffer<unsigned> counter(1);
    CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, counter.bytes(), st));
    for (bool train : {true, false}) {
      CUDA_CHECK(cudaMemsetAsync(stats.get(), 0, stats.bytes(), st));
      const cuda::SoftmaxArgs a{
          logits.get(),   b.get(),       lab.get(),  n, kClasses, s.grad_scale, train ? dl.get() : nullptr,
          partials.get(), counter.get(), stats.get()};
      cuda::launch_softmax_xent(a, st);
      const auto c = spec(train ? "softmax cross-entropy (train)" : "softmax cross-entropy (eval)");
      const auto got_stats = to_host(stats.get(), 2, st);
      const std::vector<float> gs = {float(got_stats[0]), float(got_stats[1])};
      const std::vector<float> ws = {float(s.loss_sum), float(s.correct)};
      std::vector<std::pair<std::string, Comparison>> checks = {{"loss, correct", compare(gs, ws, c.tol)}};
      if (train) checks.push_back({"dlogits", compare(to_host(dl.get(), s.dlogits.size(), st), s.dlogits, c.tol)});
      out.push_back(finish_case(c, n, checks, time_us(st, o.reps, [&] { cuda::launch_softmax_xent(a, st); }), o.peak));
    }
  }
}

void OwnKernels::backward() {
  const int n = s.n;
  {  // dense bias gradients: fc2 (no mask), fc1 (ReLU mask in place)
    auto dl = to_device(s.dlogits, st);
    DeviceBuffer<float> db2(kClasses);
    cuda::launch_dense_bias_backward(dl.get(), nullptr, n, kClasses, db2.get(), st);
    const auto c2 = spec("fc2 bias gradient");
    out.push_back(finish_case(
        c2, n, {{"fc2.bias grad", compare(to_host(db2.get(), kClasses, st), s.g_fc2b, c2.tol)}},
        time_us(st, o.reps, [&] { cuda::launch_dense_bias_backward(dl.get(), nullptr, n, kClasses, db2.get(), st); }),
        o.peak));
    auto dh = to_device(s.dh_gemm, st);
    auto h = to_device(s.h, st);
    DeviceBuffer<float> db1(kReferenceHidden);
    cuda::launch_dense_bias_backward(dh.get(), h.get(), n, kReferenceHidden, db1.get(), st);
    const auto c1 = spec("fc1 ReLU mask + bias gradient");
    const auto got_dh = to_host(dh.get(), s.dh.size(), st);
    const auto got_db = to_host(db1.get(), kReferenceHidden, st);
    out.push_back(finish_case(
        c1, n, {{"dh", compare(got_dh, s.dh, c1.tol)}, {"fc1.bias grad", compare(got_db, s.g_fc1b, c1.tol)}},
        time_us(st, o.reps, [&] { cuda::launch_dense_bias_backward(dh.get(), h.get(), n, kReferenceHidden, db1.get(), st); }),
        o.peak));
  }
  // pool + ReLU + bias backward, both convolutions
  auto pool_back = [&](const char* name, const std::vector<float>& dp_ref, const std::vector<float>& p_ref,
                       const std::vector<uint8_t>& a_ref, int ch, int side, const std::vector<float>& dy_ref,
                       const std::vector<float>& db_ref) {
    auto dp = to_device(dp_ref, st);
    auto p = to_device(p_ref, st);
    auto a = to_device(a_ref, st);
    DeviceBuffer<float> dy(dy_ref.size()), db(static_cast<std::size_t>(ch));
    DeviceBuffer<double> partials(std::size_t(cuda::bias_grad_partials(n, ch, side, side)));
    DeviceBuffer<unsigned> counter(1);
    CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, counter.bytes(), st));
    auto run = [&] {
      cuda::launch_pool_relu_bias_backward(dp.get(), p.get(), a.get(), dy.get(), db.get(), partials.get(),
                                           counter.get(), n, ch, side, side, st);
    };
    run();
    const auto c = spec(name);
    const auto gdy = to_host(dy.get(), dy_ref.size(), st);
    const auto gdb = to_host(db.get(), std::size_t(ch), st);
    out.push_back(finish_case(c, n, {{"dy", compare(gdy, dy_ref, c.tol)}, {"bias grad", compare(gdb, db_ref, c.tol)}},
                              time_us(st, o.reps, run), o.peak));
  };
  pool_back("conv2 pool + ReLU + bias backward", s.dp2, s.p2, s.a2, kConv2Out, kConv2Side, s.dc2, s.g_conv2b);
  pool_back("conv1 pool + ReLU + bias backward", s.dp1, s.p1, s.a1, kConv1Out, kConv1Side, s.dc1, s.g_conv1b);
}

void OwnKernels::optimizer() {
  const int n = s.n;
  {  // Adam on the whole parameter buffer, against adam_update_reference (in place: first launch)
    std::vector<float> w = s.params, g = s.grads(), m(kReferenceParams, 0.01f), v(kReferenceParams, 1e-4f);
    auto dw = to_device(w, st), dg = to_device(g, st), dm = to_device(m, st), dv = to_device(v, st);
    AdamConfig cfg;
    const float lr_t = adam_step_size(cfg, 3);
    const cuda::AdamArgs a{dw.get(), dg.get(),  dm.get(),  dv.get(),   int(kReferenceParams),
                           lr_t,     cfg.beta1, cfg.beta2, cfg.epsilon};
    cuda::launch_adam(a, st);
    adam_update_reference(cfg, 3, w, g, m, v);
    const auto c = spec("Adam (fused)");
    out.push_back(finish_case(c, n,
                              {{"weights", compare(to_host(dw.get(), kReferenceParams, st), w, c.tol)},
                               {"m", compare(to_host(dm.get(), kReferenceParams, st), m, c.tol)},
                               {"v", compare(to_host(dv.get(), kReferenceParams, st), v, c.tol)}},
                              time_us(st, o.reps, [&] { cuda::launch_adam(a, st); }), o.peak));
  }
  {  // the in-GPU all-reduce of 3 buffers of integers (exact sums in any order)
    std::vector<std::vector<float>> host(3, std::vector<float>(kReferenceParams));
    std::vector<float> want(kReferenceParams, 0.0f);
    for (int r = 0; r < 3; ++r)
      for (std::size_t i = 0; i < kReferenceParams; ++i)
        want[i] += host[std::size_t(r)][i] = float((i * 31 + std::size_t(r) * 7) % 1024);
    std::vector<DeviceBuffer<float>> bufs;
    cuda::BufferSet set{};
    for (int r = 0; r < 3; ++r) bufs.push_back(to_device(host[std::size_t(r)], st)), set.ptr[r] = bufs.back().get();
    cuda::launch_sum_buffers(set, 3, kReferenceParams, st);
    const auto c = spec("in-GPU all-reduce (3 buffers)");
    std::vector<std::pair<std::string, Comparison>> checks;
    for (int r = 0; r < 3; ++r)
      checks.push_back({fmt::format("rank {}", r), compare(to_host(set.ptr[r], kReferenceParams, st), want, c.tol)});
    out.push_back(finish_case(c, n, checks,
                              time_us(st, o.reps, [&] { cuda::launch_sum_buffers(set, 3, kReferenceParams, st); }), o.peak));
  }
}

}  // namespace

std::vector<Result> run_own_kernels(const CudnnStages& s, const LabOptions& o, cudaStream_t st) {
  OwnKernels k(s, o, st);
  k.forward();
  k.loss();
  k.backward();
  k.optimizer();
  return k.out;
}

}  // namespace mb::lab

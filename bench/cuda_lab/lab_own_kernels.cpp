// The kernel lab: the cudnn path's own kernels (backends/cuda/kernels.h) on exact inputs,
// against the CPU stages of lab_cases, then timed: every case launches once, and
// validate_then_time reads that launch's outputs back before any timed relaunch.
#include <cmath>
#include <functional>

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
  // The case after its first launch: validated, then timed by relaunching `launch`.
  void finish(const char* name, const std::function<Checks(const CaseSpec&)>& validate,
              const std::function<void()>& launch) {
    const CaseSpec c = spec(name);
    out.push_back(validate_then_time(c, s.n, [&] { return validate(c); }, [&] { return time_us(st, o.reps, launch); },
                                     o.peak));
  }
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
    auto run = [&] { cuda::launch_gather_normalize(a, st); };
    run();
    finish("gather + normalise", [&](const CaseSpec& c) -> Checks {
      return {{"x", compare(to_host(x.get(), s.x.size(), st), s.x, c.tol)},
              {"labels", compare_ints(to_host(lab.get(), std::size_t(n), st), s.labels)}};
    }, run);
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
    finish(name, [&](const CaseSpec& c) -> Checks {
      return {{"pooled", compare(to_host(p.get(), p_ref.size(), st), p_ref, c.tol)},
              {"argmax", compare_bytes(to_host(arg.get(), a_ref.size(), st), a_ref, 0)}};
    }, run);
  };
  pool_case("conv1 bias + ReLU + pool", s.c1, kConv1B, kConv1Out, kConv1Side, s.p1, s.a1);
  pool_case("conv2 bias + ReLU + pool", s.c2, kConv2B, kConv2Out, kConv2Side, s.p2, s.a2);

  {  // fc1 bias + ReLU, in place: validated on the first launch
    auto y = to_device(s.h_gemm, st);
    auto b = to_device(host_tensor(s, kFc1B), st);
    auto run = [&] { cuda::launch_bias_relu(y.get(), b.get(), n, kReferenceHidden, st); };
    run();
    finish("fc1 bias + ReLU", [&](const CaseSpec& c) -> Checks {
      return {{"h", compare(to_host(y.get(), s.h.size(), st), s.h, c.tol)}};
    }, run);
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
      auto run = [&] { cuda::launch_softmax_xent(a, st); };
      run();  // the statistics accumulate: only this first launch's are checked
      finish(train ? "softmax cross-entropy (train)" : "softmax cross-entropy (eval)", [&](const CaseSpec& c) {
        const auto got_stats = to_host(stats.get(), 2, st);
        const std::vector<float> gs = {float(got_stats[0]), float(got_stats[1])};
        const std::vector<float> ws = {float(s.loss_sum), float(s.correct)};
        Checks checks = {{"loss, correct", compare(gs, ws, c.tol)}};
        if (train) checks.push_back({"dlogits", compare(to_host(dl.get(), s.dlogits.size(), st), s.dlogits, c.tol)});
        return checks;
      }, run);
    }
  }
}

void OwnKernels::backward() {
  const int n = s.n;
  {  // dense bias gradients: fc2 (no mask), fc1 (ReLU mask in place)
    auto dl = to_device(s.dlogits, st);
    DeviceBuffer<float> db2(kClasses);
    auto run2 = [&] { cuda::launch_dense_bias_backward(dl.get(), nullptr, n, kClasses, db2.get(), st); };
    run2();
    finish("fc2 bias gradient", [&](const CaseSpec& c) -> Checks {
      return {{"fc2.bias grad", compare(to_host(db2.get(), kClasses, st), s.g_fc2b, c.tol)}};
    }, run2);
    auto dh = to_device(s.dh_gemm, st);
    auto h = to_device(s.h, st);
    DeviceBuffer<float> db1(kReferenceHidden);
    auto run1 = [&] { cuda::launch_dense_bias_backward(dh.get(), h.get(), n, kReferenceHidden, db1.get(), st); };
    run1();  // the ReLU mask works in place on dh: validated on this first launch
    finish("fc1 ReLU mask + bias gradient", [&](const CaseSpec& c) -> Checks {
      return {{"dh", compare(to_host(dh.get(), s.dh.size(), st), s.dh, c.tol)},
              {"fc1.bias grad", compare(to_host(db1.get(), kReferenceHidden, st), s.g_fc1b, c.tol)}};
    }, run1);
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
    finish(name, [&](const CaseSpec& c) -> Checks {
      return {{"dy", compare(to_host(dy.get(), dy_ref.size(), st), dy_ref, c.tol)},
              {"bias grad", compare(to_host(db.get(), std::size_t(ch), st), db_ref, c.tol)}};
    }, run);
  };
  pool_back("conv2 pool + ReLU + bias backward", s.dp2, s.p2, s.a2, kConv2Out, kConv2Side, s.dc2, s.g_conv2b);
  pool_back("conv1 pool + ReLU + bias backward", s.dp1, s.p1, s.a1, kConv1Out, kConv1Side, s.dc1, s.g_conv1b);
}

void OwnKernels::optimizer() {
  {  // Adam on the whole parameter buffer, against adam_update_reference (in place: first launch)
    std::vector<float> w = s.params, g = s.grads(), m(kReferenceParams, 0.01f), v(kReferenceParams, 1e-4f);
    auto dw = to_device(w, st), dg = to_device(g, st), dm = to_device(m, st), dv = to_device(v, st);
    AdamConfig cfg;
    const float lr_t = adam_step_size(cfg, 3);
    const cuda::AdamArgs a{dw.get(), dg.get(),  dm.get(),  dv.get(),   int(kReferenceParams),
                           lr_t,     cfg.beta1, cfg.beta2, cfg.epsilon};
    auto run = [&] { cuda::launch_adam(a, st); };
    run();
    adam_update_reference(cfg, 3, w, g, m, v);
    finish("Adam (fused)", [&](const CaseSpec& c) -> Checks {
      return {{"weights", compare(to_host(dw.get(), kReferenceParams, st), w, c.tol)},
              {"m", compare(to_host(dm.get(), kReferenceParams, st), m, c.tol)},
              {"v", compare(to_host(dv.get(), kReferenceParams, st), v, c.tol)}};
    }, run);
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
    auto run = [&] { cuda::launch_sum_buffers(set, 3, kReferenceParams, st); };
    run();  // in place: every relaunch sums the sums
    finish("in-GPU all-reduce (3 buffers)", [&](const CaseSpec& c) {
      Checks checks;
      for (int r = 0; r < 3; ++r)
        checks.push_back({fmt::format("rank {}", r), compare(to_host(set.ptr[r], kReferenceParams, st), want, c.tol)});
      return checks;
    }, run);
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

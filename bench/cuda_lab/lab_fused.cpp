// The kernel lab: the fused path's kernels one by one. Before each kernel the device gets the
// emulator's state (so every kernel is checked alone, on exact inputs), the kernel runs on
// the device and in the emulator (the same functions, fused_math.h), and every output it
// writes is compared; only then is it timed (validate_then_time).
#include <fmt/format.h>

#include "backends/cuda/fused_kernels.h"
#include "lab_device.h"
#include "model/cnn_spec.h"

namespace mb::lab {
namespace {

using cuda::DeviceBuffer;
using fused::FusedArgs;
using fused::FusedKernel;

// The fused path's buffers on the device, mirroring a FusedState.
struct DeviceFused {
  DeviceBuffer<uint8_t> pixels, labels, a1, a2;
  DeviceBuffer<int32_t> step_idx, idx;
  DeviceBuffer<float> params, grads, p1, p2, h, dlogits, dh, g2, g1;
  DeviceBuffer<double> sample_stats, stats;
  DeviceBuffer<unsigned> counter;

  DeviceFused(const FusedState& s, cudaStream_t st) : counter(1) {
    pixels = to_device(s.data->pixels, st);
    labels = to_device(s.data->labels, st);
    CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, counter.bytes(), st));
    load(s, st);
  }
  void load(const FusedState& s, cudaStream_t st) {
    const auto& a = s.acts;
    upload(step_idx, s.step_idx, st);
    upload(idx, a.idx, st);
    upload(params, s.params, st);
    upload(grads, s.grads, st);
    upload(p1, a.p1, st), upload(a1, a.a1, st), upload(p2, a.p2, st), upload(a2, a.a2, st);
    upload(h, a.h, st), upload(dlogits, a.dlogits, st), upload(dh, a.dh, st), upload(g2, a.g2, st),
        upload(g1, a.g1, st);
    upload(sample_stats, a.sample_stats, st);
    upload(stats, std::vector<double>{s.stats[0], s.stats[1]}, st);
  }
  // The device's results, as a FusedState (a copy of `like` with every buffer downloaded).
  FusedState download(const FusedState& like, cudaStream_t st) const {
    FusedState out(like);
    auto& a = out.acts;
    a.idx = to_host(idx.get(), a.idx.size(), st);
    out.grads = to_host(grads.get(), out.grads.size(), st);
    a.p1 = to_host(p1.get(), a.p1.size(), st), a.a1 = to_host(a1.get(), a.a1.size(), st);
    a.p2 = to_host(p2.get(), a.p2.size(), st), a.a2 = to_host(a2.get(), a.a2.size(), st);
    a.h = to_host(h.get(), a.h.size(), st), a.dlogits = to_host(dlogits.get(), a.dlogits.size(), st);
    a.dh = to_host(dh.get(), a.dh.size(), st), a.g2 = to_host(g2.get(), a.g2.size(), st);
    a.g1 = to_host(g1.get(), a.g1.size(), st);
    const auto st2 = to_host(stats.get(), 2, st);
    out.stats[0] = st2[0], out.stats[1] = st2[1];
    return out;
  }
  FusedArgs args(const FusedState& s) const {
    FusedArgs a;
    a.n = s.n;
    a.hidden = cnn::kReferenceHidden;
    a.step_idx = step_idx.get();
    a.grad_scale = s.grad_scale;
    a.stats = stats.get();
    a.pixels = pixels.get();
    a.labels = labels.get();
    fused::bind_params(a, params.get(), grads.get());
    a.idx = idx.get();
    a.p1 = p1.get(), a.a1 = a1.get(), a.p2 = p2.get(), a.a2 = a2.get(), a.h = h.get();
    a.dlogits = dlogits.get(), a.dh = dh.get(), a.g2 = g2.get(), a.g1 = g1.get();
    a.sample_stats = sample_stats.get();
    a.counter = counter.get();
    return a;
  }
};

}  // namespace

std::vector<Result> run_fused_kernels(const CudnnStages& stages, const LabOptions& o, cudaStream_t st) {
  const auto cases = lab_cases(stages.n, Precision::Fp32);
  FusedState host(stages);
  DeviceFused dev(host, st);
  std::vector<Result> out;
  for (int k = 0; k < fused::kFusedKernels; ++k) {
    const auto kernel = static_cast<FusedKernel>(k);
    const CaseSpec& spec = find_case(cases, fused::fused_kernel_name(kernel));
    dev.load(host, st);
    const FusedArgs da = dev.args(host);
    cuda::launch_fused(kernel, da, st);
    auto validate = [&] {
      const FusedState got = dev.download(host, st);
      fused::emulate_kernel(kernel, host.args());  // host becomes the state after this kernel
      Checks checks;
      const auto want_f = fused_float_outputs(kernel, host), got_f = fused_float_outputs(kernel, got);
      for (std::size_t i = 0; i < want_f.size(); ++i)
        checks.push_back({want_f[i].name, compare(got_f[i].values, want_f[i].values, spec.tol)});
      const auto want_b = fused_byte_outputs(kernel, host), got_b = fused_byte_outputs(kernel, got);
      for (std::size_t i = 0; i < want_b.size(); ++i)  // near-ties may break otherwise under FMA
        checks.push_back({"argmax", compare_bytes(got_b[i], want_b[i], want_b[i].size() / 10000)});
      const auto want_i = fused_int_outputs(kernel, host), got_i = fused_int_outputs(kernel, got);
      for (std::size_t i = 0; i < want_i.size(); ++i) checks.push_back({"indices", compare_ints(got_i[i], want_i[i])});
      return checks;
    };
    // The timed relaunches accumulate into the device's gradients and statistics: the next
    // kernel starts from the emulator's state again (dev.load above).
    out.push_back(validate_then_time(
        spec, stages.n, validate, [&] { return time_us(st, o.reps, [&] { cuda::launch_fused(kernel, da, st); }); },
        o.peak));
  }
  return out;
}

}  // namespace mb::lab

// The FP32 multiply-add peak of one core, per Highway target: twelve independent MulAdd chains
// (enough to cover two FMA units of four cycles' latency) in a loop with nothing else in it.
// On SSE4 and below MulAdd is a multiply and an add, so the figure is what kernels written
// against Highway can reach on that target, not what the silicon could do with other code.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "fma_peak.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <time.h>

#include <chrono>
#include <cstdint>

#include "fma_peak.h"

HWY_BEFORE_NAMESPACE();
namespace mb::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Returns flops done; `sink` keeps the result alive.
HWY_NOINLINE double fma_loop(int64_t iterations, float* sink) {
  const hn::ScalableTag<float> d;
  constexpr int kChains = 12;
  hn::Vec<decltype(d)> a[kChains];
  for (int i = 0; i < kChains; ++i) a[i] = hn::Set(d, 0.001f * float(i));
  const auto m = hn::Set(d, 0.9999f), c = hn::Set(d, 1e-4f);
  for (int64_t k = 0; k < iterations; ++k)
    for (int i = 0; i < kChains; ++i) a[i] = hn::MulAdd(a[i], m, c);
  auto sum = a[0];
  for (int i = 1; i < kChains; ++i) sum = hn::Add(sum, a[i]);
  *sink = hn::GetLane(sum);
  return 2.0 * double(iterations) * kChains * double(hn::Lanes(d));
}

}  // namespace mb::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::bench {

HWY_EXPORT(fma_loop);

double fma_peak_gflops(double seconds) {
  float sink = 0.0f;
  double best = 0.0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto cpu_seconds = [] {   // this thread's CPU time: the machine's other load takes none of it
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  };
  do {   // best of several short rounds
    const double start = cpu_seconds();
    const double flops = HWY_DYNAMIC_DISPATCH(fma_loop)(2'000'000, &sink);
    const double s = cpu_seconds() - start;
    if (flops / s > best) best = flops / s;
  } while (std::chrono::steady_clock::now() < deadline);
  return best * 1e-9 + 0.0f * sink;
}

}  // namespace mb::bench
#endif  // HWY_ONCE

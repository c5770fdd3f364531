// Kernel lab for the CPU engine (llm.c dev/ style): every hand-written kernel of
// core/backends/onednn is validated against the reference layers, then timed, on each Highway
// target this CPU runs; then the FP32 FMA peak per target and the oneDNN training step layer
// by layer, so a regression on one instruction set shows up as a number.
//   build/bin/kernel_bench                 everything (about a minute)
//   build/bin/kernel_bench --validate      validation only, every target (seconds; a ctest)
//   build/bin/kernel_bench --target avx2 --batch 64 --layers
//   build/bin/kernel_bench --peak          the FMA peak of one core per target, one line each
//   build/bin/kernel_bench --only conv2 --target avx2 --seconds 5   (e.g. under perf record)
//   build/bin/kernel_bench --model lenet5 --batch 128   any model's step as the engine plans it, per layer
//   build/bin/kernel_bench --hidden 4096 --layers   a what-if dense width: the step, the dense
//                                          GEMMs against the FMA peak, Adam against its traffic
// Emulating an AVX2-only CPU on an AVX-512 one: kernel_bench --onednn-isa avx2 --target avx2
#include <omp.h>

#include <algorithm>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/adam_kernel.h"
#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/conv1_pool.h"
#include "backends/onednn/onednn_engine.h"
#include "backends/onednn/onednn_plan.h"
#include "backends/onednn/simd_target.h"
#include "backends/onednn/step_plan.h"
#include "backends/onednn/winograd_conv2.h"
#include "backends/reference/layers.h"
#include "fma_peak.h"
#include "config/train_options.h"
#include "model/cnn_spec.h"
#include "model/init_params.h"
#include "model/model_spec.h"
#include "model/model_text.h"
#include "optim/adam.h"
#include "util/error.h"
#include "util/random.h"
#include "util/system_info.h"

namespace mb::bench {
namespace {

using Clock = std::chrono::steady_clock;   // deadlines

// What kernels are timed with: this thread's CPU time while one thread runs the kernel (on a
// shared machine other load then costs only cache space, not the time slices it takes), wall
// time with more threads. Set once from --threads.
bool g_cpu_clock = true;

double now() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
}

struct Options {
  bool validate_only = false;
  bool layers_only = false;
  bool peak_only = false;
  std::string only;             // run just the kernel groups whose name contains this (conv1, pool2, conv2, adam)
  std::string target = "all";   // a Highway target name, or every supported one
  std::vector<int> batches = {128, 64};
  double seconds = 0.3;         // of timing per kernel and target
  int threads = 1;
  int hidden = cnn::kReferenceHidden;   // the dense width (--hidden: a what-if model)
  std::string model;            // --model: profile this model's plan per layer instead
};

// Best time per call over rounds of about 20 ms each, for about `seconds` in all: on a shared
// machine other load only ever adds time, so the minimum is the kernel's own cost.
double time_per_call(const std::function<void()>& f, double seconds) {
  f();   // warm caches and the dispatch table
  int calls = 1;
  for (;;) {
    const double start = now();
    for (int i = 0; i < calls; ++i) f();
    if (now() - start > 0.02 || calls > (1 << 20)) break;
    calls *= 2;
  }
  double best = 1e30;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    const double start = now();
    for (int i = 0; i < calls; ++i) f();
    best = std::min(best, (now() - start) / calls);
  } while (Clock::now() < deadline);
  return best;
}

// Element (n, c, h, w) of a [n, channels, side, side] tensor blocked by `block` (blocked_pool.h).
std::size_t blocked_at(int n, int c, int h, int w, int channels, int side, int block) {
  return ((((std::size_t(n) * (channels / block) + c / block) * side + h) * side + w) * block) + c % block;
}

std::vector<float> to_blocked(const std::vector<float>& plain, int n, int channels, int side, int block) {
  std::vector<float> out(plain.size());
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < channels; ++c)
      for (int i = 0; i < side * side; ++i)
        out[blocked_at(s, c, i / side, i % side, channels, side, block)] =
            plain[blocked_at(s, c, i / side, i % side, channels, side, 1)];
  return out;
}

std::vector<float> to_plain(const std::vector<float>& blocked, int n, int channels, int side, int block) {
  std::vector<float> out(blocked.size());
  for (int s = 0; s < n; ++s)
    for (int c = 0; c < channels; ++c)
      for (int i = 0; i < side * side; ++i)
        out[blocked_at(s, c, i / side, i % side, channels, side, 1)] =
            blocked[blocked_at(s, c, i / side, i % side, channels, side, block)];
  return out;
}

// max |x - ref| / (|ref| + floor): llm.c's atol + rtol*|ref| rule as one number (see selftest.h).
double worst_rel(const std::vector<float>& x, const std::vector<float>& ref, double floor) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = std::fabs(double(x[i]) - double(ref[i]));
    worst = std::max(worst, std::isnan(d) ? 1e30 : d / (std::fabs(double(ref[i])) + floor));
  }
  return worst;
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

struct Row {
  std::string kernel, target;
  int batch = 0;
  double seconds = 0;       // per call
  double flops = 0, bytes = 0;
  double error = 0, tolerance = 0;
  bool ok() const { return error <= tolerance; }
};

void print_header() {
  fmt::print("{:<28} {:>7} {:>6} {:>11} {:>9} {:>8} {:>10} {:>9}  {}\n", "kernel", "target", "batch", "us/call",
             "GFLOP/s", "GB/s", "error", "tol", "valid");
}

void print_row(const Row& r, bool timed) {
  const std::string us = timed ? fmt::format("{:.2f}", r.seconds * 1e6) : "-";
  const std::string gf = timed && r.flops > 0 ? fmt::format("{:.1f}", r.flops / r.seconds * 1e-9) : "-";
  const std::string gb = timed && r.bytes > 0 ? fmt::format("{:.1f}", r.bytes / r.seconds * 1e-9) : "-";
  const std::string batch = r.batch > 0 ? std::to_string(r.batch) : "-";
  fmt::print("{:<28} {:>7} {:>6} {:>11} {:>9} {:>8} {:>10.2e} {:>9.1e}  {}\n", r.kernel, r.target, batch, us, gf, gb,
             r.error, r.tolerance, r.ok() ? "ok" : "FAIL");
  std::fflush(stdout);
}

// A kernel's forward and backward rows: timed (unless only validating), printed, and their
// checks folded into all_ok.
template <typename Fwd, typename Bwd>
void report_pass(Row& f, Fwd&& fwd, Row& b, Bwd&& bwd, const Options& opt, bool& all_ok) {
  if (!opt.validate_only) {
    f.seconds = time_per_call(fwd, opt.seconds);
    b.seconds = time_per_call(bwd, opt.seconds);
  }
  print_row(f, !opt.validate_only);
  print_row(b, !opt.validate_only);
  all_ok = all_ok && f.ok() && b.ok();
}

// ---- conv1 + ReLU + pool1, forward and weight gradient, against the reference layers ----
struct Conv1Data {
  int n;
  std::vector<float> images, weights, taps, bias, d_pooled;            // d_pooled plain nchw
  std::vector<float> pooled_ref, dw_ref, db_ref;                       // the reference's answers
};

Conv1Data make_conv1(int n) {
  constexpr int C = cnn::kConv1Out, O = cnn::kConv1Side, S = cnn::kPool1Side;
  Conv1Data k{n, {}, {}, {}, {}, {}, {}, {}, {}};
  SplitMix64 rng(21);
  k.images.resize(std::size_t(n) * cnn::kImagePixels);
  for (std::size_t i = 0; i < k.images.size(); ++i)   // a zero background, as in Fashion-MNIST
    k.images[i] = (i % cnn::kImageSide) < 6 ? 0.0f : static_cast<float>(rng.next_unit());
  k.weights.resize(std::size_t(C) * onednn::kConv1Taps);
  k.taps.resize(k.weights.size());
  k.bias.resize(C);
  for (auto& x : k.weights) x = static_cast<float>(rng.next_unit() - 0.5);
  for (auto& x : k.bias) x = static_cast<float>(0.2 * (rng.next_unit() - 0.5));
  onednn::conv1_weights_to_taps(k.weights.data(), k.taps.data());
  k.d_pooled.resize(std::size_t(n) * C * S * S);
  for (auto& x : k.d_pooled) x = static_cast<float>(rng.next_unit() - 0.5);

  std::vector<float> y(std::size_t(n) * C * O * O), dy(y.size());
  const ref::ConvShape cs{n, 1, cnn::kImageSide, cnn::kImageSide, C, 3};
  const ref::PoolShape ps{n, C, O, O};
  k.pooled_ref.resize(k.d_pooled.size());
  k.dw_ref.resize(k.weights.size());
  k.db_ref.resize(C);
  ref::conv2d_forward(cs, k.images.data(), k.weights.data(), k.bias.data(), y.data());
  ref::relu_forward(y.data(), y.data(), y.size());
  ref::maxpool2x2_forward(ps, y.data(), k.pooled_ref.data());
  ref::maxpool2x2_backward(ps, y.data(), k.d_pooled.data(), dy.data());
  ref::relu_backward(y.data(), dy.data(), dy.data(), dy.size());
  ref::conv2d_backward(cs, k.images.data(), k.weights.data(), dy.data(), nullptr, k.dw_ref.data(), k.db_ref.data());
  return k;
}

void bench_conv1(const Conv1Data& k, int block, const std::string& target, const Options& opt, bool& all_ok) {
  constexpr int C = cnn::kConv1Out, S = cnn::kPool1Side;
  const int n = k.n;
  std::vector<float> pooled(k.d_pooled.size());
  std::vector<uint8_t> arg(pooled.size());
  std::vector<double> dt(k.taps.size()), db(C);
  const std::vector<float> dp = to_blocked(k.d_pooled, n, C, S, block);
  auto fwd = [&] {
    onednn::conv1_relu_pool_forward(n, k.images.data(), k.taps.data(), k.bias.data(), block, pooled.data(),
                                    arg.data());
  };
  auto bwd = [&] {
    onednn::conv1_relu_pool_backward(n, k.images.data(), pooled.data(), dp.data(), arg.data(), block, dt.data(),
                                     db.data());
  };
  fwd();
  bwd();
  std::vector<float> dw(k.dw_ref.size()), dbf(C);
  onednn::conv1_taps_to_weights(dt.data(), dw.data());
  for (int c = 0; c < C; ++c) dbf[c] = static_cast<float>(db[c]);
  // Same tolerances as tests/test_backend_ops.cpp: float vs double sums.
  const double conv_flops = 2.0 * cnn::kConv1Side * cnn::kConv1Side * C * onednn::kConv1Taps * n;
  Row f{fmt::format("conv1+relu+pool fwd nc{}", block), target, n, 0, conv_flops, 0,
        worst_rel(to_plain(pooled, n, C, S, block), k.pooled_ref, 0.1), 1e-5};
  Row b{fmt::format("conv1 bwd-weights nc{}", block), target, n, 0, conv_flops, 0,
        std::max(worst_rel(dw, k.dw_ref, 0.1 * max_abs(k.dw_ref)), worst_rel(dbf, k.db_ref, 0.1 * max_abs(k.db_ref))),
        1e-4};
  report_pass(f, fwd, b, bwd, opt, all_ok);
}

// ---- pool2 + ReLU mask + flatten (selection only: must be exact) ----
void bench_pool2(int n, int in_block, int out_block, const std::string& target, const Options& opt, bool& all_ok) {
  constexpr int C = cnn::kConv2Out, IN = cnn::kConv2Side, OUT = cnn::kPool2Side;
  SplitMix64 rng(7);
  std::vector<float> in_plain(std::size_t(n) * C * IN * IN), d_out_plain(std::size_t(n) * C * OUT * OUT);
  for (auto& x : in_plain) x = static_cast<float>(int(rng.below(9)) - 4) * 0.25f;   // ties and ReLU zeros
  for (auto& x : d_out_plain) x = static_cast<float>(rng.next_unit() - 0.5);
  const ref::PoolShape ps{n, C, IN, IN};
  std::vector<float> ref_out(d_out_plain.size()), masked(d_out_plain.size()), ref_din(in_plain.size());
  ref::maxpool2x2_forward(ps, in_plain.data(), ref_out.data());
  for (std::size_t i = 0; i < masked.size(); ++i) masked[i] = ref_out[i] > 0.0f ? d_out_plain[i] : 0.0f;
  ref::maxpool2x2_backward(ps, in_plain.data(), masked.data(), ref_din.data());

  const onednn::PoolShape shape{n, C, IN, OUT, in_block, out_block};
  const std::vector<float> in = to_blocked(in_plain, n, C, IN, in_block);
  const std::vector<float> d_out = to_blocked(d_out_plain, n, C, OUT, out_block);
  std::vector<float> out(d_out.size()), d_in(in.size());
  std::vector<uint8_t> arg(out.size());
  auto fwd = [&] { onednn::max_pool_forward(shape, in.data(), out.data(), arg.data()); };
  auto bwd = [&] { onednn::max_pool_backward_relu(shape, d_out.data(), out.data(), arg.data(), d_in.data()); };
  fwd();
  bwd();
  auto count_wrong = [](const std::vector<float>& a, const std::vector<float>& b) {
    double wrong = 0;
    for (std::size_t i = 0; i < a.size(); ++i) wrong += a[i] != b[i];
    return wrong;
  };
  const double in_bytes = 4.0 * in.size(), out_bytes = 4.0 * out.size();
  Row f{fmt::format("pool2 fwd nc{}->nc{}", in_block, out_block), target, n, 0, 0,
        in_bytes + out_bytes + out.size(), count_wrong(to_plain(out, n, C, OUT, out_block), ref_out), 0};
  Row b{fmt::format("pool2+relu bwd nc{}->nc{}", in_block, out_block), target, n, 0, 0,
        in_bytes + 2 * out_bytes + out.size(), count_wrong(to_plain(d_in, n, C, IN, in_block), ref_din), 0};
  report_pass(f, fwd, b, bwd, opt, all_ok);
}

// ---- own Winograd conv2: forward (+bias +ReLU), data and weight gradients ----
struct Conv2Data {
  int n;
  std::vector<float> x, w, bias, dy;            // plain nchw / OIHW
  std::vector<float> y_ref, dx_ref, dw_ref, db_ref;
};

Conv2Data make_conv2(int n) {
  constexpr int CI = cnn::kConv1Out, CO = cnn::kConv2Out, IS = cnn::kPool1Side, OS = cnn::kConv2Side;
  Conv2Data k{n, {}, {}, {}, {}, {}, {}, {}, {}};
  SplitMix64 rng(31);
  k.x.resize(std::size_t(n) * CI * IS * IS);
  k.w.resize(std::size_t(CO) * CI * 9);
  k.bias.resize(CO);
  k.dy.resize(std::size_t(n) * CO * OS * OS);
  for (auto& v : k.x) v = std::max(0.0f, static_cast<float>(rng.next_unit() - 0.3));   // post-ReLU: zeros
  for (auto& v : k.w) v = static_cast<float>(0.16 * (rng.next_unit() - 0.5));
  for (auto& v : k.bias) v = static_cast<float>(0.1 * (rng.next_unit() - 0.5));
  for (auto& v : k.dy) v = static_cast<float>(rng.next_unit() - 0.5);
  const ref::ConvShape cs{n, CI, IS, IS, CO, 3};
  k.y_ref.resize(k.dy.size());
  k.dx_ref.resize(k.x.size());
  k.dw_ref.resize(k.w.size());
  k.db_ref.resize(CO);
  ref::conv2d_forward(cs, k.x.data(), k.w.data(), k.bias.data(), k.y_ref.data());
  ref::relu_forward(k.y_ref.data(), k.y_ref.data(), k.y_ref.size());
  ref::conv2d_backward(cs, k.x.data(), k.w.data(), k.dy.data(), k.dx_ref.data(), k.dw_ref.data(), k.db_ref.data());
  return k;
}

void bench_conv2(const Conv2Data& k, const std::string& target, const Options& opt, bool& all_ok) {
  constexpr int CI = cnn::kConv1Out, CO = cnn::kConv2Out, IS = cnn::kPool1Side, OS = cnn::kConv2Side;
  const int n = k.n;
  onednn::WinogradConv2Weights u;
  const std::vector<float> x = to_blocked(k.x, n, CI, IS, 16), dy = to_blocked(k.dy, n, CO, OS, 16);
  std::vector<float> y(dy.size()), dx(x.size()), dw(k.w.size()), db(CO);
  auto wt = [&] { onednn::winograd_conv2_set_weights(k.w.data(), u); };
  onednn::Conv2OutputGrad g;
  g.dy = dy.data();
  auto fwd = [&] { onednn::winograd_conv2_forward(u, n, x.data(), k.bias.data(), y.data()); };
  auto bwd = [&] { onednn::winograd_conv2_backward(u, n, x.data(), g, dx.data(), dw.data(), db.data()); };
  auto bwd_d = [&] { onednn::winograd_conv2_backward(u, n, x.data(), g, dx.data(), nullptr, nullptr); };
  auto bwd_w = [&] { onednn::winograd_conv2_backward(u, n, x.data(), g, nullptr, dw.data(), db.data()); };
  wt();
  fwd();
  bwd();
  // The selftest's gradient rule: 1e-4 of the tensor's largest magnitude plus 1e-3 of the value.
  auto err = [](const std::vector<float>& got, const std::vector<float>& want) {
    return worst_rel(got, want, 0.1 * max_abs(want)) / 1e-3;
  };
  const double flops = 2.0 * n * OS * OS * CO * CI * 9;   // direct convolution's count
  std::vector<Row> rows = {
      {"conv2 wino weights", target, 0, 0, 0, 4.0 * (k.w.size() + 2 * u.forward.size()), 0, 1},
      {"conv2 wino fwd+relu", target, n, 0, flops, 0, err(to_plain(y, n, CO, OS, 16), k.y_ref), 1},
      {"conv2 wino bwd (data+weights)", target, n, 0, 2 * flops, 0,
       std::max({err(to_plain(dx, n, CI, IS, 16), k.dx_ref), err(dw, k.dw_ref), err(db, k.db_ref)}), 1},
      {"conv2 wino bwd data only", target, n, 0, flops, 0, 0, 1},
      {"conv2 wino bwd weights only", target, n, 0, flops, 0, 0, 1}};
  if (!opt.validate_only) {
    rows[0].seconds = time_per_call(wt, opt.seconds);
    rows[1].seconds = time_per_call(fwd, opt.seconds);
    rows[2].seconds = time_per_call(bwd, opt.seconds);
    rows[3].seconds = time_per_call(bwd_d, opt.seconds);
    rows[4].seconds = time_per_call(bwd_w, opt.seconds);
  }
  for (const Row& r : rows) {
    print_row(r, !opt.validate_only);
    all_ok = all_ok && r.ok();
  }
}

// ---- Adam over the whole model (bit-identical to the reference: error = differing floats) ----
// The same memory traffic as Adam (read w, g, m, v; write w, m, v) with one multiply-add per
// array instead of Adam's math: what this machine's memory gives that access pattern, Adam's
// anchor for a model too large for the caches.
void adam_traffic(std::vector<float>& w, const std::vector<float>& g, std::vector<float>& m, std::vector<float>& v) {
  float* __restrict pw = w.data();
  float* __restrict pm = m.data();
  float* __restrict pv = v.data();
  const float* __restrict pg = g.data();
  for (std::size_t i = 0; i < w.size(); ++i) {
    pm[i] = 0.9f * pm[i] + pg[i];
    pv[i] = 0.999f * pv[i] + pg[i];
    pw[i] = pw[i] + 1e-3f * pg[i];
  }
}

void bench_adam(const std::string& target, const Options& opt, bool& all_ok) {
  const std::size_t count = reference_family(opt.hidden).param_count();
  SplitMix64 rng(3);
  std::vector<float> w(count), g(count), m(count), v(count);
  for (std::size_t i = 0; i < count; ++i) {
    w[i] = static_cast<float>(rng.next_unit() - 0.5);
    g[i] = static_cast<float>(std::ldexp(rng.next_unit() - 0.5, int(rng.below(20)) - 15));
    m[i] = static_cast<float>(0.01 * (rng.next_unit() - 0.5));
    v[i] = static_cast<float>(1e-4 * rng.next_unit());
  }
  std::vector<float> w2 = w, m2 = m, v2 = v;
  const AdamConfig cfg;
  onednn::adam_update(cfg, 3, w, g, m, v);
  adam_update_reference(cfg, 3, w2, g, m2, v2);
  double wrong = 0;
  for (std::size_t i = 0; i < count; ++i)
    wrong += std::memcmp(&w[i], &w2[i], 4) != 0 || std::memcmp(&m[i], &m2[i], 4) != 0 ||
             std::memcmp(&v[i], &v2[i], 4) != 0;
  const std::string name = fmt::format("adam ({} params)", count);
  Row r{name.c_str(), target, 0, 0, 0, 28.0 * count, wrong, 0};   // 4 arrays read, 3 written
  if (!opt.validate_only) {
    int64_t step = 4;
    r.seconds = time_per_call([&] { onednn::adam_update(cfg, step++, w, g, m, v); }, opt.seconds);
    Row ref{"adam reference loop", "-", 0, 0, 0, r.bytes, 0, 0};
    ref.seconds = time_per_call([&] { adam_update_reference(cfg, step++, w2, g, m2, v2); }, opt.seconds);
    Row traffic{"its traffic, no math (anchor)", "-", 0, 0, 0, r.bytes, 0, 0};
    traffic.seconds = time_per_call([&] { adam_traffic(w2, g, m2, v2); }, opt.seconds);
    print_row(r, true);
    print_row(ref, true);
    print_row(traffic, true);
    fmt::print("  adam at {:.0f} % of its traffic's bandwidth ({:.1f} of {:.1f} GB/s)\n", 100 * traffic.seconds / r.seconds,
               r.bytes / r.seconds * 1e-9, r.bytes / traffic.seconds * 1e-9);
  } else {
    print_row(r, false);
  }
  all_ok = all_ok && r.ok();
}

// ---- the whole oneDNN training step, stage by stage ----
std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return fmt::format("isa {:#x}", int(isa));
  }
}

// The dense layers' GEMMs (fc1 and fc2: forward, backward data, backward weights) of the
// default plan against the FMA peak of this core, measured now: a wider model runs at its
// hardware's pace when these are near the peak.
void print_dense_share(const std::vector<onednn::NetPlan::StageTime>& stages, int batch, const Options& opt) {
  double seconds = 0;
  for (const auto& st : stages)
    if (std::string_view(st.name).starts_with("fc") && std::string_view(st.name).find("mask") == std::string_view::npos)
      seconds += st.seconds / std::max<int64_t>(1, st.calls);
  const double flops = 3.0 * 2.0 * batch * (double(cnn::kFlat) * opt.hidden + double(opt.hidden) * cnn::kClasses);
  const double peak = fma_peak_gflops(std::max(opt.seconds, 0.5));
  const double rate = flops / std::max(1e-12, seconds) * 1e-9;
  fmt::print("  dense layers (fc1, fc2: forward and both backward GEMMs): {:.3f} ms, {:.1f} GFLOP/s = {:.0f} % of "
             "the FMA peak ({:.1f} GFLOP/s, SIMD target {})\n",
             seconds * 1e3, rate, 100 * rate / peak, peak, onednn::simd_target());
}

// One NetPlan per conv2 choice (--cpu-conv2 own, onednn, onednn-direct), their profiled steps taken in
// turn so that the machine's other load falls on all of them alike; per stage the best of
// the rounds.
void bench_layers(int batch, const Options& opt) {
  omp_set_num_threads(opt.threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const std::size_t param_count = reference_family(opt.hidden).param_count();
  std::vector<float> params(param_count), grads(param_count);
  init_params(reference_family(opt.hidden), params, 5);
  const Conv2Kernel kinds[] = {Conv2Kernel::Own, Conv2Kernel::Onednn, Conv2Kernel::OnednnDirect};
  constexpr int kVariants = 3;
  std::vector<std::string> variants;
  std::vector<std::unique_ptr<onednn::NetPlan>> plans;
  for (const Conv2Kernel k : kinds) {
    variants.push_back(to_string(k));
    plans.push_back(std::make_unique<onednn::NetPlan>(engine, batch, opt.hidden, params.data(), grads.data(), k));
  }
  SplitMix64 rng(9);
  for (auto& plan : plans) {
    for (int i = 0; i < batch * cnn::kImagePixels; ++i)
      plan->input()[i] = (i % cnn::kImageSide) < 6 ? 0.0f : static_cast<float>(rng.next_unit());
    for (int i = 0; i < batch * cnn::kClasses; ++i) plan->logits_grad()[i] = static_cast<float>(rng.next_unit() - 0.5);
  }
  uint64_t version = 0;
  auto step = [&](onednn::NetPlan& plan) {
    plan.sync_weights(stream, ++version);   // every step, as after each Adam update
    plan.forward(stream, true, {});
    plan.backward(stream);
  };
  std::vector<double> whole(kVariants, 1e30);
  std::vector<std::vector<onednn::NetPlan::StageTime>> best(kVariants);
  const auto deadline = Clock::now() + std::chrono::duration<double>(6 * opt.seconds);
  do {
    for (int v = 0; v < kVariants; ++v) {
      onednn::NetPlan& plan = *plans[v];
      for (int i = 0; i < 3; ++i) {
        const double start = now();
        step(plan);
        whole[v] = std::min(whole[v], now() - start);
      }
      plan.set_profiling(true, g_cpu_clock);
      for (int i = 0; i < 3; ++i) step(plan);
      const auto& p = plan.profile();
      if (best[v].empty()) best[v] = p;
      for (std::size_t i = 0; i < p.size() && i < best[v].size(); ++i)
        best[v][i].seconds = std::min(best[v][i].seconds, p[i].seconds);
      plan.set_profiling(false);
    }
  } while (Clock::now() < deadline);

  fmt::print("\ntraining step, batch {}, {} thread(s), SIMD target {}, oneDNN ISA {}; ms per stage ({}), best of "
             "rounds\n",
             batch, opt.threads, onednn::simd_target(), isa_name(dnnl::get_effective_cpu_isa()),
             g_cpu_clock ? "thread CPU time" : "wall time");
  for (int v = 0; v < kVariants; ++v) fmt::print("  --cpu-conv2 {}: {}\n", variants[std::size_t(v)], plans[v]->describe());
  fmt::print("{:<28}", "stage");
  for (const std::string& v : variants) fmt::print(" {:>14}", fmt::format("conv2={}", v));
  fmt::print("\n");
  std::vector<double> sum(kVariants, 0.0);
  for (std::size_t i = 0; i < best[0].size(); ++i) {
    fmt::print("{:<28}", best[0][i].name);
    for (int v = 0; v < kVariants; ++v) {
      const double ms = i < best[v].size() ? best[v][i].seconds / best[v][i].calls * 1e3 : 0.0;
      sum[v] += ms;
      fmt::print(" {:>14.3f}", ms);
    }
    fmt::print("\n");
  }
  fmt::print("{:<28}", "sum of stages");
  for (double ms : sum) fmt::print(" {:>14.3f}", ms);
  fmt::print("\n{:<28}", "whole step (unprofiled)");
  for (double s : whole) fmt::print(" {:>14.3f}", s * 1e3);
  fmt::print("\n{:<28}", "GFLOP/s nominal");
  for (double s : whole) fmt::print(" {:>14.1f}", reference_family(opt.hidden).train_flops_per_image() * batch / s * 1e-9);
  fmt::print("\n  ({:.2f} MFLOP per image, ModelSpec::train_flops_per_image, dense width {})\n",
             reference_family(opt.hidden).train_flops_per_image() * 1e-6, opt.hidden);
  print_dense_share(best[0], batch, opt);
}

// Any model's step, as the engine plans it (make_step_plan: the own kernels for the reference
// family, one oneDNN primitive per layer otherwise): per stage the best of rounds, the whole
// step, and its GFLOP/s against this core's FMA peak, so a layer that runs far from the peak
// shows which.
void bench_model_layers(int batch, const Options& opt) {
  const ModelSpec model = model_from_text(opt.model);
  omp_set_num_threads(opt.threads);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::vector<float> params(model.param_count()), grads(model.param_count());
  init_params(model, params, 5);
  auto plan = onednn::make_step_plan(engine, batch, model, params.data(), grads.data());
  SplitMix64 rng(9);
  for (int64_t i = 0; i < batch * model.input().size(); ++i) plan->input()[i] = static_cast<float>(rng.next_unit());
  for (int i = 0; i < batch * model.classes(); ++i) plan->logits_grad()[i] = static_cast<float>(rng.next_unit() - 0.5);
  std::vector<int> ids(static_cast<std::size_t>(batch));
  for (int i = 0; i < batch; ++i) ids[std::size_t(i)] = i;
  const SampleKeys samples{ids, DropoutKey{1, 0}};
  uint64_t version = 0;
  auto step = [&] {
    plan->sync_weights(stream, ++version);
    plan->forward(stream, true, samples);
    plan->backward(stream);
  };
  std::vector<double> wholes;   // unprofiled steps: the best and the median
  std::vector<onednn::StepPlan::StageTime> best;
  const auto deadline = Clock::now() + std::chrono::duration<double>(6 * opt.seconds);
  do {
    for (int i = 0; i < 3; ++i) {
      const double start = now();
      step();
      wholes.push_back(now() - start);
    }
    plan->set_profiling(true, g_cpu_clock);
    for (int i = 0; i < 3; ++i) step();
    const auto& p = plan->profile();
    if (best.empty()) best = p;
    for (std::size_t i = 0; i < p.size() && i < best.size(); ++i) best[i].seconds = std::min(best[i].seconds, p[i].seconds);
    plan->set_profiling(false);
  } while (Clock::now() < deadline);

  std::sort(wholes.begin(), wholes.end());
  const double whole = wholes.front(), median = wholes[wholes.size() / 2];
  const double flops = model.train_flops_per_image() * batch;
  const double peak = fma_peak_gflops(std::max(opt.seconds, 0.5));
  fmt::print("\n{}: training step, batch {}, {} thread(s), oneDNN ISA {}; ms per stage ({}), best of rounds\n",
             model_text(model), batch, opt.threads, isa_name(dnnl::get_effective_cpu_isa()),
             g_cpu_clock ? "thread CPU time" : "wall time");
  fmt::print("  {}\n", plan->describe());
  double sum = 0;
  for (const auto& st : best) {
    const double ms = st.seconds / std::max<int64_t>(1, st.calls) * 1e3;
    sum += ms;
    fmt::print("  {:<34} {:>10.3f}\n", st.name, ms);
  }
  fmt::print("  {:<34} {:>10.3f}\n  {:<34} {:>10.3f}\n  {:<34} {:>10.3f}\n", "sum of stages", sum,
             "whole step (unprofiled, best)", whole * 1e3, "whole step (unprofiled, median)", median * 1e3);
  fmt::print("  {:.2f} MFLOP per image: {:.1f} GFLOP/s = {:.0f} % of the FMA peak ({:.1f} GFLOP/s)\n",
             model.train_flops_per_image() * 1e-6, flops / whole * 1e-9, 100 * flops / whole * 1e-9 / peak, peak);
}

int run(const Options& opt) {
  omp_set_num_threads(opt.threads);
  g_cpu_clock = opt.threads == 1;
  fmt::print("CPU: {}; Highway targets:", cpu_model_name());
  for (const auto& t : onednn::simd_targets()) fmt::print(" {}{}", t.name, t.supported ? "" : " (not on this CPU)");
  fmt::print("; oneDNN ISA {}\n\n", isa_name(dnnl::get_effective_cpu_isa()));
  std::vector<std::string> targets;
  for (const auto& t : onednn::simd_targets())
    if (t.supported && (opt.target == "all" || opt.target == t.name)) targets.push_back(t.name);
  MB_CHECK(!targets.empty(), ConfigError, "--target {}: not a SIMD target this CPU runs", opt.target);

  if (!opt.model.empty()) {
    for (int n : opt.batches) bench_model_layers(n, opt);
    return 0;
  }
  if (opt.peak_only) {   // one line per target, for scripts: "peak TARGET GFLOP/s"
    for (const auto& target : targets) {
      onednn::force_simd_target(target);
      fmt::print("peak {} {:.1f}\n", target, fma_peak_gflops(std::max(opt.seconds, 0.5)));
    }
    return 0;
  }
  bool all_ok = true;
  if (!opt.layers_only) {
    print_header();
    // The reference answers once per batch size (the double-precision conv2 takes seconds).
    std::vector<Conv1Data> conv1_data;
    std::vector<Conv2Data> conv2_data;
    for (int n : opt.batches) {
      conv1_data.push_back(make_conv1(n));
      conv2_data.push_back(make_conv2(n));
    }
    for (const auto& target : targets) {
      onednn::force_simd_target(target);
      auto wanted = [&](const char* group) { return opt.only.empty() || std::string(group).find(opt.only) != std::string::npos; };
      for (std::size_t b = 0; b < opt.batches.size(); ++b) {
        if (wanted("conv1")) for (int block : {16, 8}) bench_conv1(conv1_data[b], block, target, opt, all_ok);
        if (wanted("pool2")) for (int in_block : {16, 8}) bench_pool2(opt.batches[b], in_block, 1, target, opt, all_ok);
        if (wanted("conv2")) bench_conv2(conv2_data[b], target, opt, all_ok);
      }
      if (wanted("adam")) bench_adam(target, opt, all_ok);
      if (opt.validate_only) {   // the remaining layouts, which production does not use
        const Conv1Data k = make_conv1(3);
        bench_conv1(k, 1, target, opt, all_ok);
        bench_pool2(3, 16, 16, target, opt, all_ok);
        bench_pool2(3, 8, 8, target, opt, all_ok);
        bench_pool2(3, 1, 1, target, opt, all_ok);
      }
    }
    onednn::force_simd_target("");
  }
  if (opt.validate_only) {
    fmt::print("\n{}\n", all_ok ? "all kernels match the reference" : "SOME KERNELS DO NOT MATCH THE REFERENCE");
    return all_ok ? 0 : 1;
  }
  if (!opt.only.empty()) return all_ok ? 0 : 1;
  if (!opt.layers_only) {
    fmt::print("\nFP32 multiply-add peak of one core (12 independent chains, best of {:.1f} s):\n", opt.seconds);
    for (const auto& target : targets) {
      onednn::force_simd_target(target);
      fmt::print("  {:<7} {:>7.1f} GFLOP/s\n", target, fma_peak_gflops(opt.seconds));
    }
    onednn::force_simd_target("");
  }
  if (opt.target != "all") onednn::force_simd_target(opt.target);
  for (int n : opt.batches) bench_layers(n, opt);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace mb::bench

int main(int argc, char** argv) {
  mb::bench::Options opt;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto value = [&]() -> std::string {
        MB_CHECK(i + 1 < argc, mb::ConfigError, "{} needs a value", a);
        return argv[++i];
      };
      if (a == "--validate") {
        opt.validate_only = true;
        opt.batches = {37};
      } else if (a == "--layers") {
        opt.layers_only = true;
      } else if (a == "--peak") {
        opt.peak_only = true;
      } else if (a == "--only") {
        opt.only = value();
      } else if (a == "--target") {
        opt.target = value();
      } else if (a == "--onednn-isa") {
        // The run option of the same name (once per process, before any primitive).
        mb::TrainConfig c;
        mb::set_option(mb::train_option("onednn_isa"), c, value());
        mb::apply_cpu_kernel_options(c.engine);
      } else if (a == "--batch") {
        opt.batches = {std::stoi(value())};
      } else if (a == "--seconds") {
        opt.seconds = std::stod(value());
      } else if (a == "--threads") {
        opt.threads = std::stoi(value());
      } else if (a == "--model") {
        opt.model = value();
        mb::model_from_text(opt.model);   // an invalid text: the parser's message, exit 2
      } else if (a == "--hidden") {
        opt.hidden = std::stoi(value());
        MB_CHECK(opt.hidden >= 1 && opt.hidden <= mb::kMaxUnits, mb::ConfigError, "--hidden {}: outside 1..{}",
                 opt.hidden, mb::kMaxUnits);
      } else {
        std::fprintf(stderr,
                     "usage: kernel_bench [--validate | --layers | --peak] [--only conv1|pool2|conv2|adam] "
                     "[--target NAME] [--onednn-isa ISA] [--batch N] [--seconds S] [--threads T] [--hidden N] "
                     "[--model SPEC]\n");
        return 2;
      }
    }
    return mb::bench::run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_bench: %s\n", e.what());
    return 2;
  }
}

// Which oneDNN 2.6 implementation serves the model's conv2 (32 -> 64 channels, 3x3, 13x13 ->
// 11x11) and fc1 (1600 -> 64) best on this CPU: every layout / algorithm / post-op variant of
// the forward, backward-data and backward-weights primitives, with the implementation oneDNN
// picked and the best time per call. NetPlan (core/backends/onednn/onednn_plan.cpp) encodes
// the winners per ISA; rerun this on a new kind of CPU to check them:
//   build/bin/onednn_variants [--batch N]               (the CPU's own ISA)
//   ONEDNN_MAX_CPU_ISA=AVX2 build/bin/onednn_variants    (an AVX2-only CPU, emulated)
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "model/cnn_spec.h"
#include "util/system_info.h"

namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Tag = memory::format_tag;
using Clock = std::chrono::steady_clock;

// This thread's CPU time (one OpenMP thread: the primitive runs here): a shared machine's other
// load then costs only cache space, not the time slices it takes.
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double best_seconds(const std::function<void()>& f, double seconds) {
  f();
  double best = 1e30;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    const double start = cpu_seconds();
    f();
    best = std::min(best, cpu_seconds() - start);
  } while (Clock::now() < deadline);
  return best;
}

memory::desc md(const memory::dims& d, Tag t) { return {d, memory::data_type::f32, t}; }

// Random contents for every argument, so timings see realistic (non-denormal) data.
memory filled(const dnnl::engine& eng, const memory::desc& d) {
  memory m(d, eng);
  float* p = static_cast<float*>(m.get_data_handle());
  const std::size_t n = d.get_size() / sizeof(float);
  for (std::size_t i = 0; i < n; ++i) p[i] = float((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
  return m;
}

struct Runner {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{eng};
  double seconds = 0.3;

  template <typename Pd>
  void time(const std::string& what, const Pd& pd, const std::vector<std::pair<int, memory::desc>>& args,
            double flops) {
    if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0) {   // seconds per call: not a candidate
      fmt::print("  {:<44} {:<30} (reference implementation only: not timed)\n", what, pd.impl_info_str());
      return;
    }
    std::unordered_map<int, memory> m;
    for (const auto& [arg, d] : args) m.emplace(arg, filled(eng, d));
    m.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng));
    dnnl::primitive pr(pd);
    const double s = best_seconds(
        [&] {
          pr.execute(stream, m);
          stream.wait();
        },
        seconds);
    fmt::print("  {:<44} {:<30} {:>8.3f} ms {:>7.1f} GFLOP/s\n", what, pd.impl_info_str(), s * 1e3, flops / s * 1e-9);
    std::fflush(stdout);
  }
};

dnnl::primitive_attr attr(bool relu) {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    a.set_post_ops(po);
  }
  return a;
}

void conv2(Runner& r, int n) {
  using namespace mb::cnn;
  const memory::dims src{n, kConv1Out, kPool1Side, kPool1Side}, wei{kConv2Out, kConv1Out, 3, 3},
      bia{kConv2Out}, dst{n, kConv2Out, kConv2Side, kConv2Side}, one{1, 1}, zero{0, 0};
  const double flops = 2.0 * n * kConv2Side * kConv2Side * kConv2Out * kConv1Out * 9;
  struct Layout {
    const char* name;
    Tag act;
  };
  for (const Layout& l : {Layout{"any", Tag::any}, Layout{"nChw8c", Tag::nChw8c}, Layout{"nChw16c", Tag::nChw16c},
                          Layout{"nhwc", Tag::nhwc}, Layout{"nchw", Tag::nchw}}) {
    for (algorithm alg : {algorithm::convolution_direct, algorithm::convolution_winograd, algorithm::convolution_auto}) {
      const char* an = alg == algorithm::convolution_direct ? "direct" : alg == algorithm::convolution_winograd ? "winograd" : "auto";
      for (bool relu : {true, false}) {
        const std::string label = fmt::format("{} {} {}", l.name, an, relu ? "+relu" : "");
        dnnl::convolution_forward::primitive_desc fwd;
        try {
          fwd = dnnl::convolution_forward::primitive_desc(
              {prop_kind::forward_training, alg, md(src, l.act), md(wei, Tag::any), md(bia, Tag::x), md(dst, l.act),
               one, zero, zero},
              attr(relu), r.eng);
        } catch (const dnnl::error&) {
          fmt::print("  fwd   {:<38} (no implementation)\n", label);
          continue;
        }
        r.time("fwd   " + label, fwd,
               {{DNNL_ARG_SRC, fwd.src_desc()}, {DNNL_ARG_WEIGHTS, fwd.weights_desc()},
                {DNNL_ARG_BIAS, fwd.bias_desc()}, {DNNL_ARG_DST, fwd.dst_desc()}},
               flops);
        if (relu) continue;   // the backward primitives take no post-ops
        try {
          dnnl::convolution_backward_data::primitive_desc bd(
              {alg, fwd.src_desc(), md(wei, Tag::any), fwd.dst_desc(), one, zero, zero}, attr(false), r.eng, fwd);
          r.time("bwd-d " + label, bd,
                 {{DNNL_ARG_DIFF_DST, bd.diff_dst_desc()}, {DNNL_ARG_WEIGHTS, bd.weights_desc()},
                  {DNNL_ARG_DIFF_SRC, bd.diff_src_desc()}},
                 flops);
        } catch (const dnnl::error&) {
          fmt::print("  bwd-d {:<38} (no implementation)\n", label);
        }
        try {
          dnnl::convolution_backward_weights::primitive_desc bw(
              {alg, fwd.src_desc(), md(wei, Tag::any), md(bia, Tag::x), fwd.dst_desc(), one, zero, zero}, attr(false),
              r.eng, fwd);
          r.time("bwd-w " + label, bw,
                 {{DNNL_ARG_SRC, bw.src_desc()}, {DNNL_ARG_DIFF_DST, bw.diff_dst_desc()},
                  {DNNL_ARG_DIFF_WEIGHTS, bw.diff_weights_desc()}, {DNNL_ARG_DIFF_BIAS, bw.diff_bias_desc()}},
                 flops);
        } catch (const dnnl::error&) {
          fmt::print("  bwd-w {:<38} (no implementation)\n", label);
        }
      }
    }
  }
}

void fc1(Runner& r, int n) {
  using namespace mb::cnn;
  const memory::dims src{n, kFlat}, wei{kReferenceHidden, kFlat}, bia{kReferenceHidden}, dst{n, kReferenceHidden};
  const double flops = 2.0 * n * kFlat * kReferenceHidden;
  for (Tag w : {Tag::oi, Tag::io, Tag::any}) {
    const char* wn = w == Tag::oi ? "weights oi" : w == Tag::io ? "weights io" : "weights any";
    auto fwd = dnnl::inner_product_forward::primitive_desc(
        {prop_kind::forward_training, md(src, Tag::nc), md(wei, w), md(bia, Tag::x), md(dst, Tag::nc)}, attr(true),
        r.eng);
    r.time(fmt::format("fc1 fwd+relu {}", wn), fwd,
           {{DNNL_ARG_SRC, fwd.src_desc()}, {DNNL_ARG_WEIGHTS, fwd.weights_desc()}, {DNNL_ARG_BIAS, fwd.bias_desc()},
            {DNNL_ARG_DST, fwd.dst_desc()}},
           flops);
    dnnl::inner_product_backward_data::primitive_desc bd({md(src, Tag::nc), md(wei, w), md(dst, Tag::nc)},
                                                         attr(false), r.eng, fwd);
    r.time(fmt::format("fc1 bwd-d {}", wn), bd,
           {{DNNL_ARG_DIFF_DST, bd.diff_dst_desc()}, {DNNL_ARG_WEIGHTS, bd.weights_desc()},
            {DNNL_ARG_DIFF_SRC, bd.diff_src_desc()}},
           flops);
    dnnl::inner_product_backward_weights::primitive_desc bw(
        {md(src, Tag::nc), md(wei, w), md(bia, Tag::x), md(dst, Tag::nc)}, attr(false), r.eng, fwd);
    r.time(fmt::format("fc1 bwd-w {}", wn), bw,
           {{DNNL_ARG_SRC, bw.src_desc()}, {DNNL_ARG_DIFF_DST, bw.diff_dst_desc()},
            {DNNL_ARG_DIFF_WEIGHTS, bw.diff_weights_desc()}, {DNNL_ARG_DIFF_BIAS, bw.diff_bias_desc()}},
           flops);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> batches = {128, 64};
  Runner r;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--batch") batches = {std::stoi(argv[i + 1])};
    if (a == "--seconds") r.seconds = std::stod(argv[i + 1]);
  }
  omp_set_num_threads(1);
  fmt::print("CPU: {}; oneDNN {}.{}.{}, 1 thread; best thread CPU time per call\n", mb::cpu_model_name(),
             dnnl::version()->major, dnnl::version()->minor, dnnl::version()->patch);
  for (int n : batches) {
    fmt::print("\nconv2, batch {} (GFLOP/s: direct-convolution flops)\n", n);
    conv2(r, n);
    fmt::print("\nfc1, batch {}\n", n);
    fc1(r, n);
  }
  return 0;
}

// Every available engine against the reference engine on the same parameters and batches
// (see selftest.h). Tolerances are chosen for FP32 engines and justified where they are set.
#include "backends/selftest.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "data/data_source.h"
#include "data/synthetic.h"
#include "backends/devices.h"
#include "backends/registry.h"
#include "backends/onednn/onednn_engine.h"
#include "backends/reference/reference_engine.h"
#include "data/dataset.h"
#include "model/init_params.h"
#include "optim/adam.h"
#include "util/error.h"
#include "util/random.h"
#include "util/tolerance.h"

namespace mb {
namespace {

// FP32 engines sum in float, in their own order (blocked GEMM, Winograd transforms), while the
// reference sums in double, so each element differs by a few float ulps of the sum of the
// |terms| behind it. Those sums are at most the tensor's largest magnitude times a modest
// factor, so the absolute part is scaled by the tensor's max |ref|: 1e-4 of it is ~1000 ulps,
// far above the noise (~1e-6 measured) and far below any real bug (a wrong index, a missed
// ReLU mask or a dropped bias shift elements by O(max |ref|)). The relative part (1e-3) covers
// the large elements.
constexpr double kGradAtolFraction = 1e-4;
constexpr double kGradRtol = 1e-3;
// Loss sums: per-sample losses agree to ~1e-6 relative; summing n of them in double.
constexpr Tolerance kLossTol{1e-4, 1e-5};
// Hits may differ by one sample whose two top logits tie to within float noise.
constexpr Tolerance kCorrectTol{1.0, 1e-9};
// Adam is checked against the host reference update applied to the engine's OWN gradients
// (so gradient noise does not count twice). An update moves a weight by at most ~lr = 1e-3;
// 1e-6 absolute is 0.1% of that, room for GPU sqrt/division rounding; CPU engines run the
// identical loop and agree exactly.
constexpr Tolerance kAdamTol{1e-6, 1e-6};

struct Target {
  Backend backend;
  std::string device_label;
  DeviceSpec device;
};

SelftestCase make_case(const Target& t, std::string what) {
  SelftestCase c;
  c.backend = std::string(to_string(t.backend));
  c.device = t.device_label;
  c.what = std::move(what);
  return c;
}

// The case's fields from the shared rule (util/tolerance.h): max_rel_err = ratio x rtol is
// |x - ref| / (|ref| + atol/rtol) at the worst element, so pass is max_rel_err <= rtol.
void judge(SelftestCase& c, double ratio, Tolerance tol) {
  c.tol = tol.rtol;
  c.abs_floor = tol.atol / tol.rtol;
  c.max_rel_err = ratio * tol.rtol;
  c.pass = ratio <= 1.0;
}

SelftestCase compare(const Target& t, std::string what, std::span<const float> x, std::span<const float> ref,
                     Tolerance tol) {
  SelftestCase c = make_case(t, std::move(what));
  if (x.size() != ref.size()) {
    judge(c, std::numeric_limits<double>::infinity(), tol);
    c.note = fmt::format("size {} vs reference {}", x.size(), ref.size());
    c.max_abs_err = std::numeric_limits<double>::infinity();
    return c;
  }
  const WorstElement worst = worst_element(x, ref, tol);
  judge(c, worst.ratio, tol);
  c.max_abs_err = worst.max_abs_err;
  if (!c.pass)
    c.note = fmt::format("worst at [{}]: {} vs reference {}", worst.index, float(worst.x), float(worst.ref));
  return c;
}

SelftestCase compare_scalar(const Target& t, std::string what, double x, double ref, Tolerance tol) {
  SelftestCase c = make_case(t, std::move(what));
  judge(c, tolerance_ratio(x, ref, tol), tol);
  c.max_abs_err = std::fabs(x - ref);
  if (!c.pass) c.note = fmt::format("{} vs reference {}", x, ref);
  return c;
}

// Fashion-MNIST-like images of the model's shape: exact-zero background (so ReLU zeros and
// max-pool ties occur as in the real data) and one bright textured object whose shape and size
// follow the label, drawn in every channel with its own brightness. At 28x28x1 with 10 classes
// these are the images the checks have always used.
Dataset synthetic_images(const ModelSpec& model, int64_t count, uint64_t seed, std::string name) {
  const ImageShape s = model.input();
  Dataset d;
  d.name = std::move(name);
  d.count = count;
  d.rows = s.h;
  d.cols = s.w;
  d.channels = s.c;
  d.classes = model.classes();
  d.pixels.assign(static_cast<std::size_t>(count * d.pixels_per_image()), 0);
  d.labels.resize(static_cast<std::size_t>(count));
  auto scaled = [](int v, int side) { return std::max(1, v * side / 28); };   // a length at 28 px
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    const int label = static_cast<int>(rng.below(uint64_t(d.classes)));
    d.labels[i] = static_cast<uint8_t>(label);
    uint8_t* img = d.pixels.data() + i * d.pixels_per_image();
    const int cx = scaled(11, s.w) + int(rng.below(uint64_t(scaled(6, s.w))));
    const int cy = scaled(11, s.h) + int(rng.below(uint64_t(scaled(6, s.h))));
    const int ax = scaled(3 + label % 5 + int(rng.below(3)), s.w);
    const int ay = scaled(3 + label / 2 % 5 + int(rng.below(3)), s.h);
    std::vector<int> base(std::size_t(s.c));
    for (int& b : base) b = 90 + int(rng.below(120));
    for (int y = 0; y < s.h; ++y)
      for (int x = 0; x < s.w; ++x) {
        const double u = double(x - cx) / ax, v = double(y - cy) / ay;
        const bool inside = label % 10 < 5 ? u * u + v * v <= 1.0 : std::fabs(u) <= 1.0 && std::fabs(v) <= 1.0;
        if (!inside) continue;
        for (int c = 0; c < s.c; ++c) {
          const int texture = int(rng.below(61)) - 30 + (y % 3 == 0 ? 25 : 0);
          img[(c * s.h + y) * s.w + x] = static_cast<uint8_t>(std::clamp(base[std::size_t(c)] + texture, 1, 255));
        }
      }
  }
  return d;
}

// init_params gives zero biases; random ones exercise the bias paths of every layer.
std::vector<float> test_params(uint64_t seed, const ModelSpec& model) {
  std::vector<float> p(model.param_count());
  init_params(model, p, seed);
  SplitMix64 rng(seed ^ 0xB1A5ull);
  for (const auto& t : model.shape().params)
    if (t.fan_in == 0)
      for (std::size_t i = 0; i < t.size; ++i) p[t.offset + i] = static_cast<float>(0.1 * (rng.next_unit() - 0.5));
  return p;
}

// n distinct sample indices, a seeded shuffle of 0..count-1.
std::vector<int32_t> pick_indices(int64_t count, int n, uint64_t seed) {
  std::vector<int32_t> all(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) all[i] = static_cast<int32_t>(i);
  SplitMix64 rng(seed);
  shuffle(std::span<int32_t>(all), rng);
  all.resize(static_cast<std::size_t>(std::min<int64_t>(n, count)));
  return all;
}

std::vector<float> grads_of(const ReplicaEngine& e) {
  std::vector<float> g(e.model().param_count());
  e.get_grads(g);
  return g;
}

std::vector<float> params_of(const ReplicaEngine& e) {
  std::vector<float> p(e.model().param_count());
  e.get_params(p);
  return p;
}

void add_stats(std::vector<SelftestCase>& out, const Target& t, const std::string& prefix, const BatchStats& x,
               const BatchStats& ref) {
  out.push_back(compare_scalar(t, prefix + "loss sum", x.loss_sum, ref.loss_sum, kLossTol));
  out.push_back(compare_scalar(t, prefix + "correct", double(x.correct), double(ref.correct), kCorrectTol));
  SelftestCase s = compare_scalar(t, prefix + "samples", double(x.samples), double(ref.samples), kCorrectTol);
  s.pass = x.samples == ref.samples;   // counts must agree exactly
  out.push_back(s);
}

void check_batch(std::vector<SelftestCase>& out, const Target& t, ReplicaEngine& eng, ReplicaEngine& ref,
                 const Dataset& train, int n, uint64_t seed) {
  const std::string prefix = fmt::format("batch {}: ", n);
  const std::vector<float> params = test_params(seed, eng.model());
  eng.set_params(params);
  ref.set_params(params);
  const auto idx = pick_indices(train.count, n, seed + uint64_t(n));
  const float scale = 1.0f / float(n);   // a one-replica step's mean-loss gradient

  const BatchStats sx = eng.forward_backward(idx, scale);
  const BatchStats sr = ref.forward_backward(idx, scale);
  add_stats(out, t, prefix, sx, sr);
  const auto gx = grads_of(eng), gr = grads_of(ref);
  for (const auto& p : eng.model().shape().params) {
    const std::span<const float> x(gx.data() + p.offset, p.size), r(gr.data() + p.offset, p.size);
    double scale_max = 0.0;
    for (float v : r) scale_max = std::max(scale_max, double(std::fabs(v)));
    out.push_back(compare(t, fmt::format("{}grad {}", prefix, p.name), x, r,
                          {kGradAtolFraction * scale_max + 1e-30, kGradRtol}));
  }

  // Two Adam steps (bias correction and the carried moments) against the host reference
  // update fed with the engine's own gradients.
  AdamConfig cfg;
  std::vector<float> host = params, m(params.size(), 0.0f), v(params.size(), 0.0f);
  std::vector<float> g = gx;
  for (int step = 1; step <= 2; ++step) {
    if (step > 1) {
      eng.forward_backward(pick_indices(train.count, n, seed + 7919u * uint64_t(n)), scale);
      g = grads_of(eng);
    }
    eng.apply_adam(cfg, step);
    adam_update_reference(cfg, step, host, g, m, v);
    out.push_back(compare(t, fmt::format("{}adam step {}", prefix, step), params_of(eng), host, kAdamTol));
  }
}

void check_empty(std::vector<SelftestCase>& out, const Target& t, ReplicaEngine& eng, const Dataset& train,
                 int max_batch) {
  // Fill the gradients first, so the empty batch must visibly clear them.
  eng.forward_backward(pick_indices(train.count, std::min(3, max_batch), 99), 1.0f);
  const BatchStats s = eng.forward_backward({}, 1.0f);
  const auto g = grads_of(eng);
  double worst = std::fabs(s.loss_sum) + double(s.correct) + double(s.samples);
  for (float v : g) worst = std::max(worst, double(std::fabs(v)));
  SelftestCase c = make_case(t, "empty batch: zero gradients and stats");
  c.max_abs_err = c.max_rel_err = worst;
  c.pass = worst == 0.0;
  out.push_back(c);
}

void check_evaluate(std::vector<SelftestCase>& out, const Target& t, ReplicaEngine& eng, ReplicaEngine& ref,
                    const DataSplit& data, int max_batch, uint64_t seed) {
  const std::vector<float> params = test_params(seed + 1, eng.model());
  eng.set_params(params);
  ref.set_params(params);
  // Two full chunks and a ragged one: exercises the engines' chunking.
  const int n = 2 * max_batch + 13;
  const auto vi = pick_indices(data.val.count, n, seed + 3);
  add_stats(out, t, fmt::format("evaluate val ({}): ", vi.size()), eng.evaluate(vi), ref.evaluate(vi));
  const auto ti = pick_indices(data.train.count, n, seed + 5);
  add_stats(out, t, fmt::format("evaluate train ({}): ", ti.size()), eng.evaluate_train(ti),
            ref.evaluate_train(ti));
}

std::vector<Target> resolve_targets(const std::vector<std::string>& names) {
  std::vector<Target> out;
  std::vector<GpuInfo> gpus;
  bool gpus_known = false;
  for (const auto& name : names) {
    if (name == "onednn" || name == "reference" || name == "cpu") {
      const Backend backend = resolve_backend(DeviceKind::Cpu, name == "cpu" ? std::nullopt : parse_backend(name));
      out.push_back({backend, "cpu", {DeviceKind::Cpu, 0}});
    } else if (name == "cuda") {
      if (!gpus_known) gpus = query_devices().gpus, gpus_known = true;
      for (const auto& g : gpus) out.push_back({Backend::Cuda, fmt::format("cuda:{}", g.index), {DeviceKind::Cuda, g.index}});
    } else if (name.rfind("cuda:", 0) == 0) {
      const auto d = parse_devices(name);
      MB_CHECK(d.size() == 1, ConfigError, "selftest target '{}': name one GPU", name);
      out.push_back({Backend::Cuda, name, d.front()});
    } else {
      throw ConfigError(fmt::format("selftest target '{}': use onednn, reference, cuda or cuda:N", name));
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> selftest_targets() {
  std::vector<std::string> out{"onednn"};
  for (const auto& g : query_devices().gpus) out.push_back(fmt::format("cuda:{}", g.index));
  return out;
}

std::vector<SelftestCase> run_selftest(const SelftestOptions& options) {
  MB_CHECK(!options.batches.empty(), ConfigError, "selftest: no batch sizes given");
  for (int n : options.batches) MB_CHECK(n >= 1, ConfigError, "selftest: batch size {} must be at least 1", n);
  const int max_batch = *std::max_element(options.batches.begin(), options.batches.end());
  const auto targets = resolve_targets(options.targets.empty() ? selftest_targets() : options.targets);

  DataSplit data;
  if (options.data_dir.empty()) {
    data.name = "synthetic";
    // Enough samples for distinct indices in every batch and evaluation.
    const int64_t count = std::max<int64_t>(512, 3 * int64_t(max_batch) + 64);
    data.train = synthetic_images(options.model, count, options.seed, "synthetic/train");
    data.val = synthetic_images(options.model, count, options.seed + 1, "synthetic/val");
  } else {
    data = load_data_source(options.data_dir);
  }

  std::vector<SelftestCase> out;
  for (const auto& t : targets) {
    std::string stage = "create engine";
    try {
      auto eng = t.backend == Backend::OneDnn && options.cpu_threads != 1
                     ? make_onednn_engine(max_batch, options.cpu_threads, options.model, options.engine.cpu_conv2)
                     : make_engine(t.device, t.backend, max_batch, Precision::Fp32, options.model, options.engine);
      auto ref = make_reference_engine(max_batch, options.model);
      stage = "bind data";
      eng->bind_data(data.train, data.val);
      ref->bind_data(data.train, data.val);
      for (int n : options.batches) {
        stage = fmt::format("batch {}", n);
        check_batch(out, t, *eng, *ref, data.train, n, options.seed);
      }
      stage = "empty batch";
      check_empty(out, t, *eng, data.train, max_batch);
      stage = "evaluate";
      check_evaluate(out, t, *eng, *ref, data, max_batch, options.seed);
    } catch (const std::exception& e) {
      SelftestCase c = make_case(t, stage);
      c.max_abs_err = c.max_rel_err = std::numeric_limits<double>::infinity();
      c.note = e.what();
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace mb

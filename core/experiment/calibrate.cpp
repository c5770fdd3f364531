// Calibration measurements (see calibrate.h).
#include "experiment/calibrate.h"
#include "model/model_text.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "backends/devices.h"
#include "backends/registry.h"
#include "comm/powersgd.h"
#include "model/init_params.h"
#include "util/cpu_topology.h"
#include "util/error.h"
#include "util/on_threads.h"
#include "util/random.h"
#include "util/spin_barrier.h"

namespace mb {
namespace {

using Clock = std::chrono::steady_clock;

// Uniform random images of the model's shape: the timed steps do not depend on the values.
Dataset synthetic_images(const ModelSpec& model, int64_t count) {
  Dataset d;
  d.name = "calibration";
  d.count = count;
  d.rows = model.input().h;
  d.cols = model.input().w;
  d.channels = model.input().c;
  d.classes = model.classes();
  d.pixels.resize(static_cast<std::size_t>(count * d.pixels_per_image()));
  d.labels.resize(static_cast<std::size_t>(count));
  SplitMix64 rng(12345);
  for (auto& p : d.pixels) p = static_cast<uint8_t>(rng.below(256));
  for (auto& l : d.labels) l = static_cast<uint8_t>(rng.below(uint64_t(d.classes)));
  return d;
}

// Concurrency levels: 1, 2, 4, ... and the maximum itself.
std::vector<int> levels(int max) {
  std::vector<int> out;
  for (int k = 1; k < max; k *= 2) out.push_back(k);
  out.push_back(max);
  return out;
}

// Runs fn(i) on k threads, thread i pinned to the placement's i-th CPU.
template <typename Fn>
void on_pinned_threads(int k, const CpuPlacement& where, Fn fn) {
  on_threads(k, [&](int i) {
    if (std::size_t(i) < where.order.size()) pin_current_thread(where.order[std::size_t(i)]);
    fn(i);
  });
}

// One lock-step step of k replicas at batch b (forward, backward, Adam, then a barrier, as
// every step ends in the all-reduce): the slowest replica's pace, and each replica's own
// compute without the wait (what balanced shares follow), per step, median of five rounds.
ComputePoint lockstep_point(int k, int64_t b, const CalibrateOptions& o, const Dataset& data, const CpuPlacement& where) {
  SpinBarrier barrier(k);
  std::vector<float> init(o.model.param_count());
  init_params(o.model, init, 1);
  ComputePoint point{k, b, 0, std::vector<double>(std::size_t(k))};
  on_pinned_threads(k, where, [&](int i) {
    auto engine = make_engine({DeviceKind::Cpu, i}, resolve_backend(DeviceKind::Cpu, o.backend), static_cast<int>(b),
                              Precision::Fp32, o.model);
    engine->bind_data(data, data);
    engine->set_params(init);
    std::vector<int32_t> idx(static_cast<std::size_t>(b));
    AdamConfig adam;
    double own_s = 0, adam_s = 0;   // this replica's compute and its optimizer's part, summed over the round
    auto step = [&](int s) {
      const auto start = Clock::now();
      for (int64_t j = 0; j < b; ++j) idx[std::size_t(j)] = static_cast<int32_t>((s * b + j + i * 7919) % data.count);
      engine->forward_backward(idx, 1.0f / float(b));
      const auto backward_done = Clock::now();
      engine->apply_adam(adam, s + 1);
      const auto end = Clock::now();
      own_s += std::chrono::duration<double>(end - start).count();
      adam_s += std::chrono::duration<double>(end - backward_done).count();
      barrier.arrive_and_wait();
    };
    for (int s = 0; s < 2; ++s) step(s);   // plans built, caches warm
    // Five timed rounds, the median kept: a shared machine's hiccup costs one round, not the
    // point. Rounds of a few thousand images: with 10 steps at batch 16 a round lasted 20 ms,
    // and one stall of the host moved the whole point.
    const int steps = static_cast<int>(std::max<int64_t>(o.steps, (o.round_images + b - 1) / b));
    std::vector<double> rounds, own, optimizer;
    for (int round = 0; round < 5; ++round) {
      own_s = adam_s = 0;
      const auto t0 = Clock::now();
      for (int s = 0; s < steps; ++s) step(2 + round * steps + s);
      rounds.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / steps);
      own.push_back(own_s / steps);
      optimizer.push_back(adam_s / steps);
    }
    std::sort(rounds.begin(), rounds.end());
    std::sort(own.begin(), own.end());
    std::sort(optimizer.begin(), optimizer.end());
    point.replica_s[std::size_t(i)] = own[2];   // each thread its own slot
    if (i == 0) point.step_s = rounds[2], point.optimizer_s = optimizer[2];
  });
  return point;
}

double allreduce_s(int n, std::size_t floats, const CpuPlacement& where) {
  auto comms = make_thread_communicators(n);
  std::vector<std::vector<float>> bufs(std::size_t(n), std::vector<float>(floats, 1.0f));
  // Enough repetitions for ~20 MB moved, at least 5, at most 200.
  const int reps = std::clamp(static_cast<int>(20e6 / (floats * 4.0 + 1)), 5, 200);
  double seconds = 0;
  on_pinned_threads(n, where, [&](int r) {
    for (int i = 0; i < 3; ++i) comms[std::size_t(r)]->all_reduce_sum(bufs[std::size_t(r)].data(), floats);
    comms[std::size_t(r)]->barrier();
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) comms[std::size_t(r)]->all_reduce_sum(bufs[std::size_t(r)].data(), floats);
    if (r == 0) seconds = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
  });
  return seconds;
}

// Values handled per timed round of the codec and accumulation points: ~20 M at the default
// round size, scaled with --round-images so that a quick calibration is quick in every part.
double round_values(const CalibrateOptions& o) {
  return 2e7 * double(o.round_images) / double(CalibrateOptions{}.round_images);
}

// PowerSGD's arithmetic for one step at `rank` on k replicas at once (CodecPoint), each on a
// gradient of its own refilled before every step as the backward pass would: the median of five
// rounds of the slowest replica's pace. nullopt when nothing of the model compresses at `rank`.
std::optional<CodecPoint> powersgd_codec_point(int k, int rank, const CalibrateOptions& o, const CpuPlacement& where) {
  const ModelShape& shape = o.model.shape();
  const PowerSgdLayout layout = powersgd_layout(shape.params, shape.param_count, rank);
  if (layout.matrices.empty()) return std::nullopt;
  std::size_t compressed = 0;
  for (const auto& m : layout.matrices) compressed += std::size_t(m.rows * m.cols);
  // Rounds of ~20 M values encoded (dense 4096's fc1 twice, the reference CNN's conv2 and fc1
  // a few hundred times) at the default round size, at least 3 steps each.
  const int steps = std::clamp(static_cast<int>(round_values(o) / double(compressed)), 3, 1000);
  SpinBarrier barrier(k);
  CodecPoint point{rank, k, 0};
  on_pinned_threads(k, where, [&](int i) {
    PowerSgdState state(layout, 1);
    std::vector<float> fresh(layout.count), grads(layout.count);
    std::vector<float> first(layout.plain_floats() + layout.p_floats()), second(layout.q_floats());
    SplitMix64 rng(uint64_t(977 + i));
    for (float& g : fresh) g = float(rng.next_unit() - 0.5) * 1e-2f;
    double codec_s = 0;
    auto step = [&] {
      std::copy(fresh.begin(), fresh.end(), grads.begin());
      barrier.arrive_and_wait();
      const auto start = Clock::now();
      state.encode_p(grads, first);
      state.encode_q(grads, first, second);
      state.decode(grads, first, second, k);
      barrier.arrive_and_wait();
      codec_s += std::chrono::duration<double>(Clock::now() - start).count();
    };
    step();   // buffers touched, Q warm
    std::vector<double> rounds;
    for (int round = 0; round < 5; ++round) {
      codec_s = 0;
      for (int s = 0; s < steps; ++s) step();
      rounds.push_back(codec_s / steps);
    }
    std::sort(rounds.begin(), rounds.end());
    if (i == 0) point.seconds = rounds[2];
  });
  return point;
}

// One pass of gradient accumulation (window[i] += g[i] over the model's gradient, as
// ReplicaEngine::accumulate does for each micro-batch) on k replicas at once: median of five
// rounds of the slowest replica's pace.
GradientPassPoint gradient_pass_point(int k, const CalibrateOptions& o, const CpuPlacement& where) {
  SpinBarrier barrier(k);
  GradientPassPoint point{k, 0};
  const std::size_t count = o.model.param_count();
  const int passes = std::clamp(static_cast<int>(round_values(o) / double(std::max<std::size_t>(count, 1))), 3, 1000);
  on_pinned_threads(k, where, [&](int i) {
    std::vector<float> g(count, 1e-3f), window(count, 0.0f);
    std::vector<double> rounds;
    for (int round = 0; round < 6; ++round) {
      barrier.arrive_and_wait();
      const auto t0 = Clock::now();
      for (int p = 0; p < passes; ++p)
        for (std::size_t j = 0; j < count; ++j) window[j] += g[j];
      barrier.arrive_and_wait();
      if (round > 0) rounds.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / passes);   // round 0: pages touched
    }
    // The sums are read, so that no optimizer drops the passes as stores nobody reads.
    volatile float sink = std::accumulate(window.begin(), window.end(), 0.0f);
    (void)sink;
    std::sort(rounds.begin(), rounds.end());
    if (i == 0) point.seconds = rounds[2];
  });
  return point;
}

// The all-reduce sweep: small messages for the latency, powers of two up to at least the
// model's gradient (dense 4096's 26 MB too), and the gradient itself.
std::vector<std::size_t> allreduce_sizes(std::size_t gradient_floats) {
  std::vector<std::size_t> sizes{1024, 16384, 65536, gradient_floats};
  for (std::size_t f = std::size_t(1) << 20; f <= std::max(gradient_floats, std::size_t(1) << 21); f *= 2)
    sizes.push_back(f);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

}  // namespace

Calibration calibrate_cpu(const CalibrateOptions& o, const std::function<void(const std::string&)>& progress) {
  MB_CHECK(!o.batches.empty(), ConfigError, "scaling: no batch sizes to calibrate");
  for (int64_t b : o.batches) MB_CHECK(b >= 1 && b <= 4096, ConfigError, "scaling: batch {} outside 1..4096", b);
  MB_CHECK(o.steps >= 1, ConfigError, "scaling: at least one timed step per point");
  MB_CHECK(o.round_images >= 0, ConfigError, "scaling: images per round must not be negative (got {})", o.round_images);
  const CpuPlacement where = cpu_placement();
  Calibration c;
  c.cores = std::max(1, where.physical_cores > 0 ? where.physical_cores : int(where.order.size()));
  const int max_k = o.max_concurrency > 0 ? std::min(o.max_concurrency, c.cores) : c.cores;
  c.train_size = o.train_size;
  c.model = model_text(o.model);
  c.gradient_bytes = o.model.gradient_bytes();
  c.communicator = "threads";
  c.device = make_engine({DeviceKind::Cpu, 0}, resolve_backend(DeviceKind::Cpu, o.backend), 1)->device_name();
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };

  const Dataset data = synthetic_images(o.model, 2048);
  for (int k : levels(max_k))
    for (int64_t b : o.batches) {
      c.compute.push_back(lockstep_point(k, b, o, data, where));
      const double t = c.compute.back().step_s;
      say(fmt::format("compute  {} replica(s) at batch {:4}: {:8.3f} ms/step ({:.0f} img/s each)", k, b, t * 1e3,
                      b / std::max(1e-12, t)));
    }
  for (int n : levels(max_k)) {
    if (n < 2) continue;
    for (std::size_t floats : allreduce_sizes(o.model.param_count())) {
      AllReducePoint p;
      p.ranks = n;
      p.bytes = double(floats) * sizeof(float);
      p.seconds = allreduce_s(n, floats, where);
      c.allreduce.push_back(p);
      say(fmt::format("allreduce {} ranks {:>10.0f} B: {:9.1f} us  algbw {:6.2f} GB/s  busbw {:6.2f} GB/s", n,
                      p.bytes, p.seconds * 1e6, p.algbw_gbs(), p.busbw_gbs()));
    }
  }
  for (int k : levels(max_k)) {
    c.gradient_pass.push_back(gradient_pass_point(k, o, where));
    say(fmt::format("accumulation pass on {} replica(s) at once: {:8.3f} ms", k, c.gradient_pass.back().seconds * 1e3));
  }
  // PowerSGD's arithmetic at ranks 1 and 4 (the paper's range; the predictor draws a line in
  // the rank), with one replica and with every core busy.
  std::vector<int> at_once{1};
  if (max_k > 1) at_once.push_back(max_k);
  for (int k : at_once)
    for (int rank : {1, 4})
      if (const auto p = powersgd_codec_point(k, rank, o, where)) {
        c.powersgd.push_back(*p);
        say(fmt::format("powersgd rank {} on {} replica(s) at once: {:8.3f} ms/step", rank, k, p->seconds * 1e3));
      }
  return c;
}

}  // namespace mb

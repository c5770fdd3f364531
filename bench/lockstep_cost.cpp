// What lock-step synchronisation costs a CPU training step beyond the real waiting, measured
// where the trainer pays it: N replica threads each "compute" (a busy wait of a seeded,
// uneven length, 2 ms +- 15 %: the same for every variant), then synchronise as the trainer
// does — the gradient all-reduce of the reference CNN (121,930 floats) every step and the
// step-report all-gather every `every` steps. Since every step lasts at least its slowest
// replica's compute, the overhead per step is
//     (wall time of the steps - sum over steps of the slowest replica's compute) / steps:
// barrier passes, wake-ups and the copies, without the waiting that uneven compute causes
// anyway. The anchor, in the same run: one C++20 std::barrier per step (the least a
// lock-step loop can synchronise), with the same compute; and the all-reduce's own work,
// timed when every rank arrives together, so the table also shows the overhead beyond it.
#include "lockstep_cost.h"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "allreduce_timing.h"
#include "backends/devices.h"
#include "comm/communicator.h"
#include "comm/launch.h"
#include "model/cnn_spec.h"
#include "trainer/primary_book.h"
#include "util/cpu_topology.h"
#include "util/on_threads.h"
#include "util/random.h"

namespace mb::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSteps = 200;
constexpr double kComputeS = 2e-3, kJitter = 0.15;

// Replica r's compute time at step s: the same for every variant measured.
std::vector<std::vector<double>> compute_times(int replicas) {
  std::vector<std::vector<double>> t(static_cast<std::size_t>(replicas), std::vector<double>(kSteps));
  SplitMix64 rng(7);
  for (int s = 0; s < kSteps; ++s)
    for (int r = 0; r < replicas; ++r)
      t[std::size_t(r)][std::size_t(s)] = kComputeS * (1 + kJitter * (2 * rng.next_unit() - 1));
  return t;
}

double slowest_sum(const std::vector<std::vector<double>>& t) {
  double sum = 0;
  for (int s = 0; s < kSteps; ++s) {
    double worst = 0;
    for (const auto& r : t) worst = std::max(worst, r[std::size_t(s)]);
    sum += worst;
  }
  return sum;
}

void busy_for(double seconds) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < until) {
  }
}

// Overhead per step (s) of one pass of kSteps; `sync(rank, step)` is the variant's synchronisation.
// Each replica thread on its own CPU, placed as the trainer places CPU replicas.
template <typename Sync>
double overhead_per_step(int replicas, const std::vector<std::vector<double>>& compute, Sync&& sync) {
  static const CpuPlacement placement = cpu_placement();
  double wall = 0;
  on_threads(replicas, [&](int r) {
    if (!placement.order.empty()) pin_current_thread(placement.order[std::size_t(r) % placement.order.size()]);
    sync(r, -1);   // a first pass through the barrier: everyone starts together
    const auto t0 = Clock::now();
    for (int s = 0; s < kSteps; ++s) {
      busy_for(compute[std::size_t(r)][std::size_t(s)]);
      sync(r, s);
    }
    if (r == 0) wall = std::chrono::duration<double>(Clock::now() - t0).count();
  });
  return (wall - slowest_sum(compute)) / kSteps;
}

// The all-reduce's own work: its median time when every rank arrives together.
double exchange_s(std::vector<std::unique_ptr<Communicator>>& comms, std::vector<std::vector<float>>& grads) {
  std::vector<double> times;
  on_threads(int(comms.size()), [&](int r) {
    for (int k = 0; k < 50; ++k) {
      comms[std::size_t(r)]->barrier();
      const auto t0 = Clock::now();
      comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), grads[std::size_t(r)].size());
      if (r == 0) times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    }
  });
  return median(times);
}

}  // namespace

int run_lockstep_cost(const std::vector<int>& replica_counts, int repeats) {
  const std::size_t count = std::size_t(cnn::kReferenceParams);
  std::printf("lock-step cost per step beyond the waiting: %d steps of %.1f ms +- %.0f %% compute, median of %d\n",
              kSteps, kComputeS * 1e3, kJitter * 100, repeats);
  std::printf("%-9s %-44s %12s %12s %10s\n", "replicas", "synchronisation per step", "overhead_us",
              "beyond_xchg", "x anchor");
  std::atomic<bool> exact{true};   // written by every replica thread
  for (const int n : replica_counts) {
    const auto compute = compute_times(n);
    std::barrier<> fence(n);
    const auto anchor = [&](int, int) { fence.arrive_and_wait(); };
    auto comms = make_communicators(parse_devices(fmt::format("cpu:{}", n)), nullptr);
    for (auto& c : comms) c->connect();
    std::vector<std::vector<float>> grads(static_cast<std::size_t>(n), std::vector<float>(count));
    const auto trainer_sync = [&](int every) {
      return [&, every](int r, int s) {
        Communicator& c = *comms[std::size_t(r)];
        if (s < 0) return c.barrier();
        std::vector<float>& g = grads[std::size_t(r)];
        for (std::size_t i = 0; i < count; i += 4099) g[i] = test_value(i, r);   // a few checked sums
        c.all_reduce_sum(g.data(), count);
        for (std::size_t i = 0; i < count; i += 4099)
          if (g[i] != expected_sum(i, n)) exact = false;
        if ((s + 1) % every == 0) c.all_gather(StepReport{});
      };
    };
    struct Variant {
      const char* name;
      std::function<void(int, int)> sync;
    };
    const Variant variants[] = {
        {"std::barrier (anchor)", anchor},
        {"all-reduce + report all-gather every step", trainer_sync(1)},
        {"all-reduce + report all-gather every 8 steps", trainer_sync(8)},
    };
    // "beyond_xchg": the overhead less the all-reduce's own work (its time when nobody waits).
    const double exchange = exchange_s(comms, grads);
    double anchor_s = 0;
    for (const Variant& v : variants) {
      std::vector<double> samples;
      for (int k = 0; k < repeats; ++k) samples.push_back(overhead_per_step(n, compute, v.sync));
      const double m = median(samples);
      const bool is_anchor = &v == &variants[0];
      if (is_anchor) anchor_s = m;
      std::printf("%-9d %-44s %12.1f %12.1f %10.2f\n", n, v.name, m * 1e6, (is_anchor ? m : m - exchange) * 1e6,
                  anchor_s > 0 ? m / anchor_s : 0.0);
    }
    std::printf("%-9d %-44s %12.1f\n", n, "(the all-reduce alone, nobody waiting)", exchange * 1e6);
  }
  if (!exact) std::printf("WRONG SUM\n");
  return exact ? 0 : 1;
}

}  // namespace mb::bench

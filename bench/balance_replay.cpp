// The balanced-shares rule replayed on one lock-step run's measured steps: balanced against
// lock-step on the very same step times, so the machine's run-to-run drift (10-15 % between
// two runs on a shared 2-vCPU host, more than either mode's difference) cancels out.
//   build/bin/mirrorbench-cli train --devices cpu:2 --trace T.json   (a lock-step run, every step traced)
//   build/bin/balance_replay T.json [--every 8]
// From the trace: each replica's forward + backward seconds per sample of every step (its even
// share of the global batch) and its optimizer seconds. The real ShareBalancer is fed a report
// every `every` steps (what the CPU engines report), the shares it chooses are applied to the
// steps that follow, and a step lasts as long as its slowest replica: max_r(o_r + c_r x s_r).
// Printed: the step time and the waiting (the replicas' time idle until the slowest ends) of
// both modes, their ratios, and every change. The model's one assumption, that a replica's
// seconds per sample do not depend on its share, was measured: 69-72 us per sample at shares
// 56..72 of 128 against 73-79 us at 64 on the same host (docs/benchmarks.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "trainer/share_balancer.h"

namespace {

struct StepTimes {
  std::vector<double> compute_s, optimizer_s;   // per replica
};

struct Trace {
  int replicas = 0;
  int64_t global_batch = 0;
  std::vector<StepTimes> steps;   // in run order
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "balance_replay: %s\n", what.c_str());
  std::exit(2);
}

Trace read_trace(const std::string& file) {
  std::ifstream in(file);
  if (!in) fail(fmt::format("cannot read {}", file));
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    fail(fmt::format("{} is not a Chrome trace of mirrorbench: {}", file, e.what()));
  }
  const auto& other = doc.value("otherData", nlohmann::json::object());
  Trace t;
  t.replicas = other.value("replicas", 0);
  t.global_batch = other.value("global_batch", int64_t{0});
  if (t.replicas < 2 || t.global_batch < t.replicas)
    fail(fmt::format("{}: a trace of a run with 2 or more replicas is needed (its otherData names {} replicas, "
                     "global batch {}; traces before the global batch was recorded cannot be replayed)",
                     file, t.replicas, t.global_batch));
  if (other.value("balance", false))
    fail(fmt::format("{}: a balanced run's trace; replay a lock-step run (even shares)", file));
  std::map<std::pair<int, int>, StepTimes> by_step;   // (epoch, step)
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("ph", "") != "X") continue;
    const std::string name = e.at("name");
    const int r = e.at("tid");
    StepTimes& s = by_step[{e.at("args").at("epoch").get<int>(), e.at("args").at("step").get<int>()}];
    s.compute_s.resize(std::size_t(t.replicas)), s.optimizer_s.resize(std::size_t(t.replicas));
    const double seconds = e.at("dur").get<double>() * 1e-6;
    if (name == "forward" || name == "backward") s.compute_s.at(std::size_t(r)) += seconds;
    if (name == "optimizer") s.optimizer_s.at(std::size_t(r)) += seconds;
  }
  int last_epoch = 0, last_step = 0;
  for (auto& [key, s] : by_step) {
    // Consecutive steps only: a run over 2000 steps is traced every k-th step (replica_loop.cpp).
    if (key.first == last_epoch && key.second != last_step + 1)
      fail(fmt::format("{}: steps {} and {} of epoch {} are not consecutive: the trace samples steps; trace a run "
                       "of at most 2000 steps", file, last_step, key.second, key.first));
    last_epoch = key.first, last_step = key.second;
    t.steps.push_back(std::move(s));
  }
  if (t.steps.size() < 64) fail(fmt::format("{}: {} steps; the rule needs at least 64 to decide", file, t.steps.size()));
  return t;
}

struct Outcome {
  double step_s = 0, busy_s = 0, idle_s = 0;   // summed over the steps (busy and idle over replicas)
  void add(const std::vector<double>& replica_s) {
    const double slowest = *std::max_element(replica_s.begin(), replica_s.end());
    step_s += slowest;
    for (const double x : replica_s) busy_s += x, idle_s += slowest - x;
  }
  double waiting_share() const { return idle_s / (busy_s + idle_s); }
};

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  int every = 8;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--every" && i + 1 < argc) every = std::max(1, std::stoi(argv[++i]));
    else if (!a.empty() && a[0] != '-' && file.empty()) file = a;
    else fail(fmt::format("usage: balance_replay TRACE.json [--every STEPS]  (unknown argument '{}')", a));
  }
  if (file.empty()) fail("usage: balance_replay TRACE.json [--every STEPS]");
  const Trace t = read_trace(file);
  const std::size_t n = std::size_t(t.replicas);
  const std::vector<int64_t> even = mb::even_shares(t.global_batch, t.replicas);
  mb::ShareBalancer balancer(mb::BalanceRule::for_run(t.global_batch, t.replicas));
  Outcome lock, balanced;
  std::vector<mb::ShareSample> report(n);
  int changes = 0;
  for (std::size_t k = 0; k < t.steps.size(); ++k) {
    const StepTimes& s = t.steps[k];
    const std::vector<int64_t> shares = balancer.shares();
    std::vector<double> at_even(n), at_shares(n);
    for (std::size_t r = 0; r < n; ++r) {
      const double per_sample = s.compute_s[r] / double(even[r]);
      at_even[r] = s.optimizer_s[r] + per_sample * double(even[r]);
      at_shares[r] = s.optimizer_s[r] + per_sample * double(shares[r]);
      report[r].compute_s += per_sample * double(shares[r]);
      report[r].optimizer_s += s.optimizer_s[r];
      report[r].samples += shares[r];
      report[r].steps += 1;
    }
    lock.add(at_even);
    balanced.add(at_shares);
    if ((k + 1) % std::size_t(every) != 0) continue;
    if (balancer.observe(report)) {
      ++changes;
      std::printf("  from step %zu: %s\n", k + 2, fmt::format("{}", fmt::join(balancer.shares(), " / ")).c_str());
    }
    std::fill(report.begin(), report.end(), mb::ShareSample{});
  }
  std::printf("%s: %zu steps of %d replicas, global batch %lld, reported every %d\n", file.c_str(), t.steps.size(),
              t.replicas, static_cast<long long>(t.global_batch), every);
  std::printf("  lock-step: %.3f s of steps, waiting %.1f %%\n", lock.step_s, 100 * lock.waiting_share());
  std::printf("  balanced : %.3f s of steps, waiting %.1f %%, %d change(s), final shares %s\n", balanced.step_s,
              100 * balanced.waiting_share(), changes, fmt::format("{}", fmt::join(balancer.shares(), "/")).c_str());
  std::printf("  balanced / lock-step: time %.3f, waiting %.3f\n", balanced.step_s / lock.step_s,
              lock.waiting_share() > 0 ? balanced.waiting_share() / lock.waiting_share() : 0.0);
  return 0;
}

// What bounds a run, from its measurements (see diagnosis.h).
#include "experiment/diagnosis.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "comm/powersgd.h"
#include "comm/wire_format.h"
#include "model/model_spec.h"
#include "model/model_text.h"

namespace mb {
namespace {

int64_t steps_per_epoch(const RunConfig& c) {
  return c.global_batch > 0 ? (c.train_size + c.global_batch - 1) / c.global_batch : 0;
}

// The newest epoch whose breakdown covers every replica.
const EpochMetrics* newest_timed(const RunRecord& r) {
  for (auto e = r.epochs.rbegin(); e != r.epochs.rend(); ++e)
    if (int(e->replica_times.size()) == r.config.replicas && !e->replica_times.empty()) {
      PhaseTimes sum;
      for (const PhaseTimes& t : e->replica_times) sum += t;
      if (sum.total() > 0) return &*e;
    }
  return nullptr;
}

// Seconds of category `c` per step, averaged over the epoch's replicas.
double per_step(const RunRecord& r, const EpochMetrics& e, int category) {
  const int64_t steps = steps_per_epoch(r.config);
  double sum = 0;
  for (const PhaseTimes& t : e.replica_times) sum += t[category];
  return steps > 0 ? sum / double(e.replica_times.size()) / double(steps) : 0.0;
}

double compute_per_step(const RunRecord& r, const EpochMetrics& e) {
  const int64_t steps = steps_per_epoch(r.config);
  double sum = 0;
  for (const PhaseTimes& t : e.replica_times) sum += t.compute_s();
  return steps > 0 ? sum / double(e.replica_times.size()) / double(steps) : 0.0;
}

// The calibration's points at the run's concurrency (each replica's own compute where it was
// measured), as a line over the per-replica batch; nullopt without two distinct batches.
std::optional<LinearFit> calibrated_fit(const Calibration& cal, int concurrent) {
  std::vector<double> x, y;
  for (const ComputePoint& p : cal.compute) {
    if (p.concurrent != concurrent) continue;
    double s = p.step_s;
    if (!p.replica_s.empty()) {
      s = 0;
      for (double v : p.replica_s) s += v;
      s /= double(p.replica_s.size());
    }
    x.push_back(double(p.batch));
    y.push_back(s);
  }
  if (x.size() < 2 || std::all_of(x.begin(), x.end(), [&](double v) { return v == x.front(); })) return std::nullopt;
  return fit_line(x, y);
}

std::optional<StepCostSplit> step_split(const RunRecord& run, const EpochMetrics& e, const RunRecord* baseline,
                                        const Calibration* cal) {
  const double share = double(run.config.global_batch) / std::max(1, run.config.replicas);
  StepCostSplit s;
  std::optional<LinearFit> fit;
  if (cal && timed_model(*cal) == model_text(run.config.model)) {
    fit = calibrated_fit(*cal, std::min(run.config.replicas_per_process, std::max(1, cal->cores)));
    if (fit) s.source = "the machine's calibration";
  }
  if (!fit && baseline) {
    // Two batch sizes on this machine: the baseline's whole batch and the run's share of it.
    const EpochMetrics* be = newest_timed(*baseline);
    const double b_base = double(baseline->config.global_batch);
    if (be && std::fabs(b_base - share) > 0.5) {
      const double c_base = compute_per_step(*baseline, *be), c_run = compute_per_step(run, e);
      LinearFit f;
      f.b = (c_base - c_run) / (b_base - share);
      f.a = c_run - f.b * share;
      fit = f;
      s.source = "this run and its baseline";
    }
  }
  if (!fit || !(fit->b > 0)) return std::nullopt;
  s.fixed_s = std::max(0.0, fit->a);
  s.per_sample_s = fit->b;
  s.optimizer_s = per_step(run, e, phase::Optimizer);
  const double step = s.fixed_s + s.per_sample_s * share;
  s.fixed_share = step > 0 ? s.fixed_s / step : 0;
  return s;
}

// (slowest - fastest) / median over the epochs that are not the first (which warms caches),
// or over all of them for runs of one or two epochs.
double spread_of(const RunRecord& r) {
  std::vector<double> t;
  for (std::size_t i = r.epochs.size() > 2 ? 1 : 0; i < r.epochs.size(); ++i)
    if (r.epochs[i].time_s > 0) t.push_back(r.epochs[i].time_s);
  if (t.size() < 2) return 0;
  std::sort(t.begin(), t.end());
  const double median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  return median > 0 ? (t.back() - t.front()) / median : 0;
}

std::string percent(double f) { return fmt::format("{:.0f} %", 100 * f); }
std::string ms(double s) { return s < 0.0995 ? fmt::format("{:.1f} ms", s * 1e3) : fmt::format("{:.0f} ms", s * 1e3); }

}  // namespace

Diagnosis diagnose(const RunRecord& run, const RunRecord* baseline, const Calibration* calibration,
                   const RunRecord* previous_baseline) {
  Diagnosis d;
  d.epoch_spread = spread_of(run);
  if (baseline && previous_baseline && previous_baseline->mean_epoch_time() > 0)
    d.baseline_drift = baseline->mean_epoch_time() / previous_baseline->mean_epoch_time() - 1;
  const EpochMetrics* e = run.config.replicas > 1 ? newest_timed(run) : nullptr;
  if (!e) return d;
  PhaseTimes sum;
  for (const PhaseTimes& t : e->replica_times) sum += t;
  d.compute_share = sum.compute_s() / sum.total();
  d.communication_share = sum.of(TimeRole::Communication) / sum.total();
  d.waiting_share = sum.of(TimeRole::Waiting) / sum.total();
  d.input_share = sum.of(TimeRole::Input) / sum.total();
  for (std::size_t r = 0; r < e->replica_times.size(); ++r) {
    const PhaseTimes& t = e->replica_times[r];
    if (t[phase::ComputeCpu] <= 0 || t.compute_s() <= 0) continue;
    d.cpu_measured = true;
    if (int(r) == run.config.scenario.straggler.replica) continue;   // it sleeps on purpose
    const double share = t[phase::ComputeCpu] / t.compute_s();
    if (share < Diagnosis::kDeprivedBelow) d.deprived.push_back({int(r), share, t.compute_s() - t[phase::ComputeCpu]});
  }
  d.split = step_split(run, *e, baseline, calibration);

  // Input first: loaders with a CPU cost take the replicas' cores, which also shows as deprived.
  if (d.input_share >= Diagnosis::kInputBound && d.input_share >= d.communication_share) d.bound = Bound::Input;
  else if (!d.deprived.empty() && d.waiting_share >= 0.10) d.bound = Bound::Deprived;
  else if (d.communication_share >= 0.5) d.bound = Bound::Communication;
  else if (d.split && d.split->fixed_share >= Diagnosis::kFixedBound) d.bound = Bound::FixedCost;
  else if (d.waiting_share >= 0.15 && d.waiting_share > d.communication_share) d.bound = Bound::Waiting;
  else d.bound = Bound::Compute;
  return d;
}

namespace {

// "6.6 M", "121,930"
std::string count_text(std::size_t n) {
  if (n >= 1000000) return fmt::format("{:.1f} M", double(n) * 1e-6);
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "replica 1 had its core 78 % of the time it computed", "replicas 0 and 1 had their cores 62 %
// and 52 % of the time they computed"
std::string deprived_words(const std::vector<DeprivedReplica>& deprived) {
  std::vector<std::string> ids, shares;
  for (const DeprivedReplica& x : deprived) ids.push_back(std::to_string(x.replica)), shares.push_back(percent(x.cpu_share));
  auto list = [](const std::vector<std::string>& v) {
    if (v.size() == 1) return v[0];
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
    return out;
  };
  return deprived.size() == 1
             ? fmt::format("replica {} had its core {} of the time it computed", ids[0], shares[0])
             : fmt::format("replicas {} had their cores {} of the time they computed", list(ids), list(shares));
}

}  // namespace

std::string diagnosis_text(const Diagnosis& d, const RunRecord& run) {
  const ModelSpec& model = run.config.model;
  const Scenario& scenario = run.config.scenario;
  const WireDtype wire = scenario.allreduce_dtype;
  const std::string bytes = fmt::format(
      "{:.1f} MB{}", gradient_wire_bytes(model.shape(), scenario) * 1e-6,
      scenario.powersgd_rank > 0 ? fmt::format(" as PowerSGD rank-{} factors", scenario.powersgd_rank)
      : wire == WireDtype::Fp32  ? ""
                                 : fmt::format(" as {}", wire_name(wire)));
  const std::string over = run.config.scenario.link.on()
                               ? fmt::format(" over the simulated {:g} Gbit/s link", run.config.scenario.link.gbit)
                               : std::string();
  std::string text;
  switch (d.bound) {
    case Bound::None: return {};
    case Bound::Deprived:
      text = scenario.input.cpu_ms > 0 && run.config.device_kind() == DeviceKind::Cpu
                 ? fmt::format("Deprived of CPU by the input pipeline: {} (its loaders' simulated {:g} ms of CPU per "
                               "image ran on the replicas' cores), so the replicas wait {} of their time. More loaders "
                               "do not help here; cache the prepared images, or prepare them once before training.",
                               deprived_words(d.deprived), scenario.input.cpu_ms, percent(d.waiting_share))
                 : fmt::format("Deprived of CPU, not slower: {} (other programs, or this window, took the rest), so "
                               "the replicas wait {} of their time. Close other programs or train from "
                               "mirrorbench-cli. (CPU time does not see shared caches or memory.)",
                               deprived_words(d.deprived), percent(d.waiting_share));
      break;
    case Bound::Input: {
      const InputSettings& in = scenario.input;
      text = fmt::format("Input-bound: the replicas wait {} of their time for their next batch ({} loader{} each, {} "
                         "step{} ahead per loader{}{}), so the devices are not what sets the pace. ",
                         percent(d.input_share), in.loaders, in.loaders == 1 ? "" : "s", in.prefetch,
                         in.prefetch == 1 ? "" : "s",
                         in.latency_ms > 0 ? fmt::format(", a simulated {:g} ms of latency per image", in.latency_ms) : "",
                         in.cpu_ms > 0 ? fmt::format(", a simulated {:g} ms of CPU per image", in.cpu_ms) : "");
      text += in.cpu_ms > 0 && run.config.device_kind() == DeviceKind::Cpu
                  ? "On CPU replicas the loaders' work takes the replicas' own cores: more loaders do not help; "
                    "cache the prepared images, or prepare them once before training."
                  : "More loaders and a deeper prefetch overlap a latency.";
      break;
    }
    case Bound::Communication:
      text = fmt::format("Communication-bound: exchanging the gradient ({} a step{}) takes {} of the replicas' time, "
                         "more than computing it, so more replicas add exchange and save little.",
                         bytes, over, percent(d.communication_share));
      break;
    case Bound::FixedCost: {
      const StepCostSplit& s = *d.split;
      text = fmt::format("Fixed cost: {} of each replica's compute does not shrink with its share of the batch ({} a "
                         "step: the optimizer over {} parameters {}, the weights' reads and the rest {}), so more "
                         "replicas save little. Give each a larger batch (per replica mode). (Fitted from {}.)",
                         percent(s.fixed_share), ms(s.fixed_s), count_text(model.param_count()), ms(s.optimizer_s),
                         ms(std::max(0.0, s.fixed_s - s.optimizer_s)), s.source);
      break;
    }
    case Bound::Waiting:
      text = fmt::format("Waiting-bound: the replicas wait {} of their time for the slowest{}. Balanced shares give "
                         "the faster ones more of the batch.",
                         percent(d.waiting_share), d.cpu_measured ? ", which had its core (a slower device)" : "");
      break;
    case Bound::Compute:
      text = fmt::format("Compute-bound: computing takes {}, exchanging the gradient ({} a step{}) {} of the replicas' "
                         "time, so more replicas help while each keeps enough of the batch.",
                         percent(d.compute_share), bytes, over, percent(d.communication_share));
      break;
  }
  // A deprived replica that did not bound the run is still worth a word.
  if (d.bound != Bound::Deprived && !d.deprived.empty())
    text += fmt::format(" ({}.)", deprived_words(d.deprived));
  return text;
}

std::string noise_text(const Diagnosis& d) {
  std::vector<std::string> out;
  if (d.epoch_spread > Diagnosis::kNoisySpread)
    out.push_back(fmt::format("its epochs vary by {}: the machine was busy, run it again to be sure", percent(d.epoch_spread)));
  if (d.baseline_drift && std::fabs(*d.baseline_drift) > Diagnosis::kDriftNoted)
    out.push_back(fmt::format("its baseline is {} {} than the previous one of these settings: compare again, or pin the "
                              "earlier baseline",
                              percent(std::fabs(*d.baseline_drift)), *d.baseline_drift > 0 ? "slower" : "faster"));
  return out.empty() ? std::string() : fmt::format("Noisy: {}.", fmt::join(out, "; "));
}

}  // namespace mb

// The scaling model (see scaling_model.h).
#include "experiment/scaling_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "comm/gradient_buckets.h"
#include "comm/powersgd.h"
#include "comm/simulated_link.h"
#include "comm/wire_format.h"
#include "model/model_text.h"
#include "util/bandwidth.h"
#include "util/error.h"

namespace mb {

const char* to_string(BatchMode mode) { return mode == BatchMode::PerReplica ? "per-replica" : "global"; }
namespace {

// Compute fits per measured concurrency: concurrency -> step_s(batch).
std::map<int, LinearFit> compute_fits(const Calibration& c) {
  std::map<int, std::vector<double>> xs, ys;
  for (const auto& p : c.compute) {
    xs[p.concurrent].push_back(double(p.batch));
    ys[p.concurrent].push_back(p.step_s);
  }
  std::map<int, LinearFit> out;
  for (const auto& [k, x] : xs) out[k] = fit_line(x, ys[k]);
  return out;
}

// All-reduce alpha-beta per measured rank count.
std::map<int, LinearFit> allreduce_fits(const Calibration& c) {
  std::map<int, std::vector<double>> xs, ys;
  for (const auto& p : c.allreduce) {
    xs[p.ranks].push_back(p.bytes);
    ys[p.ranks].push_back(p.seconds);
  }
  std::map<int, LinearFit> out;
  for (const auto& [n, x] : xs) out[n] = fit_line(x, ys[n]);
  return out;
}

// The measured key nearest to n (ties: the larger), for extrapolating beyond the sweep.
template <typename V>
int nearest_key(const std::map<int, V>& m, int n) {
  int best = m.begin()->first;
  for (const auto& kv : m)
    if (std::abs(kv.first - n) <= std::abs(best - n)) best = kv.first;
  return best;
}

}  // namespace

LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  MB_CHECK(!x.empty() && x.size() == y.size(), ConfigError, "scaling model: no points to fit");
  const double n = double(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  const double den = n * sxx - sx * sx;
  LinearFit f;
  if (x.size() == 1 || std::fabs(den) < 1e-30) {
    // One point (or one x): a line through the origin when x > 0, else a constant.
    f.b = sx > 0 ? sy / sx : 0;
    f.a = sx > 0 ? 0 : sy / n;
    return f;
  }
  f.b = (n * sxy - sx * sy) / den;
  f.a = (sy - f.b * sx) / n;
  return f;
}

double predicted_compute_s(const Calibration& c, int replicas, int64_t per_replica_batch) {
  const auto fits = compute_fits(c);
  MB_CHECK(!fits.empty() && fits.count(1), ConfigError, "scaling model: the calibration has no single-replica compute");
  // Beyond the cores, replicas time-share them: each lock-step step takes ceil(n / cores)
  // turns of a machine full of replicas.
  const int at_once = std::min(replicas, c.cores);
  const int k = fits.count(at_once) ? at_once : nearest_key(fits, at_once);
  const double full = fits.at(k).at(double(per_replica_batch));
  const double turns = std::ceil(double(replicas) / double(std::max(1, c.cores)));
  return std::max(0.0, full) * (replicas > c.cores ? turns : 1.0);
}

namespace {

// Replica i's own compute per step against the batch at concurrency k (from replica_s, or
// the lock-step pace where a calibration has no per-replica times).
std::vector<LinearFit> replica_fits(const Calibration& c, int k) {
  const std::size_t replicas = static_cast<std::size_t>(k);
  std::vector<std::vector<double>> xs(replicas), ys(replicas);
  for (const auto& p : c.compute) {
    if (p.concurrent != k) continue;
    for (std::size_t i = 0; i < replicas; ++i) {
      xs[i].push_back(double(p.batch));
      ys[i].push_back(i < p.replica_s.size() ? p.replica_s[i] : p.step_s);
    }
  }
  std::vector<LinearFit> out;
  for (std::size_t i = 0; i < replicas; ++i) out.push_back(fit_line(xs[i], ys[i]));
  return out;
}

}  // namespace

double predicted_step_compute_s(const Calibration& c, const PredictOptions& o, int replicas, int per_machine,
                                int64_t global_batch) {
  const int64_t even = (global_batch + replicas - 1) / replicas;
  const double lockstep = predicted_compute_s(c, per_machine, even);
  const Straggler& slow = o.scenario.straggler;
  const bool balanced = o.scenario.balanced();
  const bool straggler = slow.on() && slow.replica < replicas && slow.factor != 1.0;
  if (!straggler && (!balanced || replicas == 1)) return lockstep;   // the calibrated pace, as before
  const auto fits = compute_fits(c);
  const int at_once = std::min(per_machine, c.cores);
  const int k = fits.count(at_once) ? at_once : nearest_key(fits, at_once);
  const std::vector<LinearFit> own = replica_fits(c, k);
  // Replica j: a replica of its machine's measured position, the straggler scaled.
  auto fit_of = [&](int j) {
    LinearFit f = own[std::size_t(j % k)];
    if (straggler && j == slow.replica) f.a *= slow.factor, f.b *= slow.factor;
    return f;
  };
  const double turns = per_machine > c.cores ? std::ceil(double(per_machine) / double(std::max(1, c.cores))) : 1.0;
  // The measured pace is the slowest replica's own time plus the waiting that step-to-step
  // variation causes (the slowest of each step is slower than the slowest on average): no
  // share removes that part, so both modes keep it.
  double slowest = 0, slowest_scaled = 0;
  for (int j = 0; j < replicas; ++j) {
    slowest = std::max(slowest, own[std::size_t(j % k)].at(double(even)));
    slowest_scaled = std::max(slowest_scaled, fit_of(j).at(double(even)));
  }
  const double variation = std::max(0.0, lockstep / turns - slowest);
  if (!balanced || replicas == 1) return lockstep + (slowest_scaled - slowest) * turns;
  // Balanced: every replica finishes its share at T (see scaling_model.h); a replica's
  // minimum share is left out (it binds only for a replica many times slower than the rest).
  double per_second = 0, offsets = 0;
  for (int j = 0; j < replicas; ++j) {
    const LinearFit f = fit_of(j);
    const double per_sample = std::max(f.b, 1e-12);
    per_second += 1 / per_sample;
    offsets += f.a / per_sample;
  }
  return (std::max(0.0, (double(global_batch) + offsets) / per_second) + variation) * turns;
}

double predicted_allreduce_s(const Calibration& c, int ranks, double bytes) {
  if (ranks <= 1) return 0;
  const auto fits = allreduce_fits(c);
  MB_CHECK(!fits.empty(), ConfigError, "scaling model: the calibration has no all-reduce sweep");
  if (fits.count(ranks)) return std::max(0.0, fits.at(ranks).at(bytes));
  // Not measured: scale the nearest measurement by the ring's factors, latency 2(n-1) and
  // bytes moved 2(n-1)/n, which is how the exchange grows with n (nccl-tests' busbw).
  const int m = nearest_key(fits, ranks);
  const LinearFit& f = fits.at(m);
  const double lat = std::max(0.0, f.a) * double(ranks - 1) / double(std::max(1, m - 1));
  const double per_byte = std::max(0.0, f.b) * (double(ranks - 1) / ranks) / (double(m - 1) / m);
  return lat + per_byte * bytes;
}

double predicted_optimizer_s(const Calibration& c, int concurrent) {
  std::map<int, std::vector<double>> by_concurrency;
  for (const ComputePoint& p : c.compute)
    if (p.optimizer_s > 0) by_concurrency[p.concurrent].push_back(p.optimizer_s);
  if (by_concurrency.empty()) return 0;
  const int k = by_concurrency.count(concurrent) ? concurrent : nearest_key(by_concurrency, concurrent);
  const auto& v = by_concurrency.at(k);
  double sum = 0;
  for (double x : v) sum += x;
  return sum / double(v.size());
}

double predicted_gradient_pass_s(const Calibration& c, int concurrent) {
  std::map<int, double> by_concurrency;
  for (const GradientPassPoint& p : c.gradient_pass) by_concurrency[p.concurrent] = p.seconds;
  if (by_concurrency.empty()) return 0;
  return by_concurrency.at(by_concurrency.count(concurrent) ? concurrent : nearest_key(by_concurrency, concurrent));
}

std::optional<double> predicted_powersgd_codec_s(const Calibration& c, int rank, int concurrent) {
  std::map<int, std::vector<const CodecPoint*>> by_concurrency;
  for (const CodecPoint& p : c.powersgd) by_concurrency[p.concurrent].push_back(&p);
  if (by_concurrency.empty() || rank <= 0) return std::nullopt;
  const int k = by_concurrency.count(concurrent) ? concurrent : nearest_key(by_concurrency, concurrent);
  const auto& points = by_concurrency.at(k);
  if (points.size() == 1) return points[0]->seconds;   // one rank measured: the passes over memory dominate
  std::vector<double> ranks, seconds;
  for (const CodecPoint* p : points) {
    ranks.push_back(p->rank);
    seconds.push_back(p->seconds);
  }
  return std::max(0.0, fit_line(ranks, seconds).at(rank));
}

namespace {

// How n replicas sit on machines: how many machines, and the replicas of the fullest one.
struct Placement {
  int machines = 1, per_machine = 1;
  bool linked() const { return machines > 1; }
};

Placement place(const Calibration& c, const PredictOptions& o, int n) {
  if (o.machines > 0) {
    const int m = std::min(o.machines, n);
    return {m, (n + m - 1) / m};
  }
  if (n > c.cores && o.link_gbps > 0) return {(n + c.cores - 1) / c.cores, c.cores};
  return {1, n};
}

// The simulated link's exposed time with overlap (--bucket-mb): each bucket is ready when the
// backward pass has passed its lowest layer; the backward pass takes its share of the step's
// compute by FLOPs (forward: the layers' multiply-adds; backward: weight gradients, and input
// gradients where needed), and each layer its share of the backward pass. nullopt: the model
// is not known (a calibration made in code), so no overlap is predicted.
std::optional<double> overlapped_link_s(const Calibration& c, const PredictOptions& o, int ranks, double compute_s) {
  if (o.scenario.bucket_mb <= 0 || timed_model(c).empty()) return std::nullopt;
  const ModelSpec model = model_from_text(timed_model(c));
  const ModelShape& shape = model.shape();
  std::vector<double> backward(shape.layers.size());   // per layer, multiply-adds of its backward
  double forward = 0, total_backward = 0;
  for (std::size_t i = 0; i < shape.layers.size(); ++i) {
    const LayerShape& l = shape.layers[i];
    forward += l.macs;
    backward[i] = (l.param_count > 0 ? l.macs : 0.0) + (l.needs_input_grad ? l.macs : 0.0);
    total_backward += backward[i];
  }
  if (forward + total_backward <= 0) return std::nullopt;
  const double backward_s = compute_s * total_backward / (forward + total_backward);
  std::vector<OverlapBucket> buckets;
  for (const GradientBucket& b : gradient_buckets(shape, o.scenario.bucket_mb)) {
    double below = 0;   // the backward pass still to run once this bucket is complete
    for (int j = 0; j < b.ready_layer; ++j) below += backward[std::size_t(j)];
    buckets.push_back({b.bytes(), total_backward > 0 ? backward_s * below / total_backward : 0.0});
  }
  const double per_fp32_byte = bytes_on_wire(1.0, o.scenario.allreduce_dtype);
  return overlapped_wire(o.scenario.link, buckets, ranks, per_fp32_byte).exposed_s;
}

// PowerSGD's two exchanges, in bytes (the plain tensors with P, then Q); nullopt when it is off
// or the model is not known (a calibration made in code).
std::optional<std::array<double, 2>> powersgd_exchanges(const Calibration& c, const PredictOptions& o) {
  if (o.scenario.powersgd_rank <= 0 || timed_model(c).empty()) return std::nullopt;
  const ModelSpec model = model_from_text(timed_model(c));
  const ModelShape& shape = model.shape();
  const PowerSgdLayout layout = powersgd_layout(shape.params, shape.param_count, o.scenario.powersgd_rank);
  return std::array<double, 2>{double(layout.plain_floats() + layout.p_floats()) * sizeof(float),
                               double(layout.q_floats()) * sizeof(float)};
}

// Communication per step: the all-reduce within the fullest machine, then (several machines)
// a ring between them, and the statistics exchange (see scaling_model.h).
double predicted_comm_s(const Calibration& c, const PredictOptions& o, const Placement& at, int n,
                        const std::map<int, LinearFit>& small, double compute_s) {
  // A compressed all-reduce halves what travels on a link; within one machine's memory the
  // exchange stays the calibrated FP32 one (its rounding passes are not modelled: ~1 % of it).
  // PowerSGD sends its factors in two exchanges, each a calibrated all-reduce (and a ring over a
  // link) of its own, and its arithmetic is the calibration's (CodecPoint).
  const auto factors = powersgd_exchanges(c, o);
  const double wire_bytes_per_step =
      factors ? (*factors)[0] + (*factors)[1] : bytes_on_wire(c.gradient_bytes, o.scenario.allreduce_dtype);
  double s = factors ? predicted_allreduce_s(c, at.per_machine, (*factors)[0]) +
                           predicted_allreduce_s(c, at.per_machine, (*factors)[1])
                     : predicted_allreduce_s(c, at.per_machine, c.gradient_bytes);
  if (const SimulatedLink& link = o.scenario.link; link.on() && at.per_machine > 1) {
    // What the trainer's simulated link does: max(real, ring) per exchange, the ring's part
    // under the backward pass hidden with overlap.
    const auto ring = [&](double bytes) { return ring_all_reduce_s(bytes, at.per_machine, link.gbit, link.latency_us); };
    if (factors) {
      s = std::max(predicted_allreduce_s(c, at.per_machine, (*factors)[0]), ring((*factors)[0])) +
          std::max(predicted_allreduce_s(c, at.per_machine, (*factors)[1]), ring((*factors)[1]));
    } else {
      const auto overlapped = overlapped_link_s(c, o, at.per_machine, compute_s);
      s = std::max(s, overlapped ? *overlapped : ring(wire_bytes_per_step));
    }
  }
  if (at.linked()) {
    const double m = at.machines;
    s += 2 * (m - 1) * o.link_latency_s + 2 * (m - 1) / m * wire_bytes_per_step / (o.link_gbps * 1e9 / 8);
  }
  // PowerSGD's arithmetic runs on every replica at once, inside the exchange.
  if (factors && n > 1)
    s += predicted_powersgd_codec_s(c, o.scenario.powersgd_rank, at.per_machine).value_or(0.0);
  // Gradient accumulation: one gradient all-reduce per K steps (and one optimizer step: see
  // predict_scaling).
  s /= double(std::max(1, o.scenario.accumulate));
  if (n > 1 && !small.empty()) {
    // Within one machine of several replicas the sweep's alpha; one replica per machine
    // gathers over the link alone.
    const int k = small.count(at.per_machine) ? at.per_machine : nearest_key(small, at.per_machine);
    s += (at.per_machine > 1 ? std::max(0.0, small.at(k).a) : 0.0) + (at.linked() ? 2 * o.link_latency_s : 0.0);
  }
  return s;
}

std::string note_for(const Calibration& c, const PredictOptions& o, const Placement& at, int n) {
  if (n > 1 && o.scenario.powersgd_rank > 0 && c.powersgd.empty())
    return "PowerSGD's own arithmetic is not in this calibration (made by an earlier version): recalibrate to "
           "include it";
  if (at.linked())
    return fmt::format("{} machines of {} replica(s) over a {:g} Gbit/s link, {:g} us per message: extrapolated, "
                       "not measured here",
                       at.machines, at.per_machine, o.link_gbps, o.link_latency_s * 1e6);
  if (n > c.cores)
    return fmt::format("more replicas than the {} this machine runs at once: they would share cores "
                       "(give --link-gbps to predict more machines)",
                       c.cores);
  return {};
}

}  // namespace

std::vector<Prediction> predict_scaling(const Calibration& c, const PredictOptions& o) {
  MB_CHECK(o.max_replicas >= 1, ConfigError, "--max-replicas must be at least 1 (got {})", o.max_replicas);
  MB_CHECK(o.batch >= 1, ConfigError, "--batch must be at least 1 (got {})", o.batch);
  MB_CHECK(o.machines >= 0, ConfigError, "--machines must not be negative (got {})", o.machines);
  MB_CHECK(o.machines <= 1 || o.link_gbps > 0, ConfigError,
           "--machines {} needs the link between them (--link-gbps, and --link-latency-us)", o.machines);
  MB_CHECK(o.link_latency_s >= 0, ConfigError, "--link-latency-us must not be negative");
  MB_CHECK(!o.scenario.straggler.on() || o.scenario.straggler.factor >= 1, ConfigError,
           "--slow-replica: the factor must be at least 1 (got {:g})", o.scenario.straggler.factor);
  MB_CHECK(c.train_size >= 1 && c.cores >= 1, ConfigError, "scaling model: the calibration is empty");
  const auto small = allreduce_fits(c);
  std::vector<Prediction> out;
  for (BatchMode mode : kBatchModes) {
    double single = 0;
    for (int n = 1; n <= o.max_replicas; ++n) {
      Prediction p;
      p.replicas = n;
      p.mode = mode;
      const bool per_replica = p.mode == BatchMode::PerReplica;
      p.global_batch = per_replica ? o.batch * n : o.batch;
      if (p.global_batch < n) continue;   // fewer samples than replicas: no such run
      p.per_replica_batch = (p.global_batch + n - 1) / n;
      const Placement at = place(c, o, n);
      p.machines = at.machines;
      p.compute_s = predicted_step_compute_s(c, o, n, at.per_machine, p.global_batch);
      // Gradient accumulation: one optimizer step per K micro-batches, and every micro-batch adds
      // its gradient into the window's sum (one pass over it).
      if (const int k = std::max(1, o.scenario.accumulate); k > 1)
        p.compute_s = std::max(0.0, p.compute_s - (1.0 - 1.0 / k) * predicted_optimizer_s(c, at.per_machine) +
                                        predicted_gradient_pass_s(c, at.per_machine));
      p.comm_s = predicted_comm_s(c, o, at, n, small, p.compute_s);
      p.step_s = p.compute_s + p.comm_s;
      const int64_t steps = (c.train_size + p.global_batch - 1) / p.global_batch;
      p.epoch_s = double(steps) * p.step_s;
      if (n == 1) single = p.epoch_s;
      p.speedup = p.epoch_s > 0 ? single / p.epoch_s : 0;
      p.efficiency = p.speedup / n;
      p.comm_share = p.step_s > 0 ? p.comm_s / p.step_s : 0;
      p.beyond_machine = at.linked() || at.per_machine > c.cores;   // an extrapolation either way
      p.note = note_for(c, o, at, n);
      out.push_back(p);
    }
  }
  return out;
}

nlohmann::json to_json(const Calibration& c) {
  using nlohmann::json;
  json compute = json::array(), ar = json::array();
  for (const auto& p : c.compute)
    compute.push_back({{"concurrent", p.concurrent}, {"batch", p.batch}, {"step_s", p.step_s}, {"replica_s", p.replica_s},
                       {"optimizer_s", p.optimizer_s}});
  for (const auto& p : c.allreduce)
    ar.push_back({{"ranks", p.ranks},
                  {"bytes", p.bytes},
                  {"seconds", p.seconds},
                  {"algbw_gbs", p.algbw_gbs()},
                  {"busbw_gbs", p.busbw_gbs()}});
  json fits = json::object();
  for (const auto& [n, f] : allreduce_fits(c))
    fits[std::to_string(n)] = {{"alpha_s", f.a}, {"beta_s_per_byte", f.b}};
  json j{{"device", c.device},          {"communicator", c.communicator}, {"cores", c.cores},
              {"train_size", c.train_size},  {"gradient_bytes", c.gradient_bytes}, {"compute", std::move(compute)},
              {"allreduce", std::move(ar)},  {"allreduce_fit", std::move(fits)}};
  if (!c.model.empty()) j["model"] = c.model;   // (a calibration made in code may leave it to its gradient's size)
  if (!c.gradient_pass.empty()) {
    j["gradient_pass"] = json::array();
    for (const auto& p : c.gradient_pass) j["gradient_pass"].push_back({{"concurrent", p.concurrent}, {"seconds", p.seconds}});
  }
  if (!c.powersgd.empty()) {
    j["powersgd"] = json::array();
    for (const auto& p : c.powersgd)
      j["powersgd"].push_back({{"rank", p.rank}, {"concurrent", p.concurrent}, {"seconds", p.seconds}});
  }
  return j;
}

namespace {
// The model a calibration timed: its text, or for files written before models were layer
// lists, the reference family's model with that many parameters.
std::string calibrated_model_text(const nlohmann::json& j, double gradient_bytes) {
  if (j.contains("model")) {
    const std::string text = j.at("model").get<std::string>();
    try {
      return model_text(model_from_text(text));
    } catch (const ConfigError& e) {
      throw DataError(fmt::format("calibration: its model is not one this version trains: {}", e.what()));
    }
  }
  const auto model = reference_family_with_params(std::size_t(gradient_bytes / sizeof(float)));
  MB_CHECK(model.has_value(), DataError, "calibration: no model is named and none of the reference family has a "
                                         "gradient of {} bytes", gradient_bytes);
  return model_text(*model);
}

}  // namespace

std::string timed_model(const Calibration& c) {
  if (!c.model.empty()) return c.model;
  const auto model = reference_family_with_params(std::size_t(c.gradient_bytes / sizeof(float)));
  return model ? model_text(*model) : std::string();
}

Calibration calibration_from_json(const nlohmann::json& j) {
  try {
    Calibration c;
    c.device = j.at("device").get<std::string>();
    c.communicator = j.at("communicator").get<std::string>();
    c.cores = j.at("cores").get<int>();
    c.train_size = j.at("train_size").get<int64_t>();
    c.gradient_bytes = j.at("gradient_bytes").get<double>();
    c.model = calibrated_model_text(j, c.gradient_bytes);
    for (const auto& p : j.at("compute"))
      c.compute.push_back({p.at("concurrent").get<int>(), p.at("batch").get<int64_t>(), p.at("step_s").get<double>(),
                           p.value("replica_s", std::vector<double>{}),    // absent before balanced shares
                           p.value("optimizer_s", 0.0)});                   // absent before accumulation's saving
    for (const auto& p : j.at("allreduce"))
      c.allreduce.push_back({p.at("ranks").get<int>(), p.at("bytes").get<double>(), p.at("seconds").get<double>()});
    if (j.contains("gradient_pass"))   // absent before accumulation's own cost was timed
      for (const auto& p : j.at("gradient_pass")) {
        c.gradient_pass.push_back({p.at("concurrent").get<int>(), p.at("seconds").get<double>()});
        MB_CHECK(c.gradient_pass.back().concurrent >= 1, DataError,
                 "calibration: a gradient pass point needs concurrent of at least 1");
      }
    if (j.contains("powersgd"))   // absent before PowerSGD's arithmetic was timed
      for (const auto& p : j.at("powersgd")) {
        c.powersgd.push_back({p.at("rank").get<int>(), p.at("concurrent").get<int>(), p.at("seconds").get<double>()});
        MB_CHECK(c.powersgd.back().rank >= 1 && c.powersgd.back().concurrent >= 1, DataError,
                 "calibration: a PowerSGD point needs rank and concurrent of at least 1");
      }
    MB_CHECK(c.cores >= 1 && c.train_size >= 1, DataError, "calibration: cores and train_size must be positive");
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("calibration: {}", e.what()));
  }
}

nlohmann::json to_json(const Prediction& p) {
  return nlohmann::json{{"replicas", p.replicas},
                        {"mode", to_string(p.mode)},
                        {"machines", p.machines},
                        {"global_batch", p.global_batch},
                        {"per_replica_batch", p.per_replica_batch},
                        {"step_s", p.step_s},
                        {"compute_s", p.compute_s},
                        {"comm_s", p.comm_s},
                        {"epoch_s", p.epoch_s},
                        {"speedup", p.speedup},
                        {"efficiency", p.efficiency},
                        {"comm_share", p.comm_share},
                        {"beyond_machine", p.beyond_machine},
                        {"note", p.note}};
}

std::string predictions_csv(const std::vector<Prediction>& ps) {
  std::string out =
      "replicas,mode,machines,global_batch,per_replica_batch,step_s,compute_s,comm_s,epoch_s,speedup,efficiency,"
      "comm_share,beyond_machine,note\n";
  for (const auto& p : ps) {
    std::string note = p.note;
    std::replace(note.begin(), note.end(), '"', '\'');
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", p.replicas, to_string(p.mode), p.machines, p.global_batch,
                       p.per_replica_batch, p.step_s, p.compute_s, p.comm_s, p.epoch_s, p.speedup, p.efficiency,
                       p.comm_share, p.beyond_machine ? "true" : "false", note);
  }
  return out;
}

}  // namespace mb

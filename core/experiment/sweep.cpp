// Sweeps over the batch, the model or the link (see sweep.h).
#include "model/model_text.h"
#include "experiment/sweep.h"

#include "keras/keras_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/train_config.h"
#include "config/train_options.h"
#include "util/error.h"

namespace mb {
namespace {

double steady_epoch_s(const RunRecord& r) {
  std::vector<double> t;
  for (const auto& e : r.epochs) t.push_back(e.time_s);
  if (t.empty()) return 0;
  if (t.size() < 3) return r.mean_epoch_time();
  std::vector<double> rest(t.begin() + 1, t.end());
  std::sort(rest.begin(), rest.end());
  const std::size_t m = rest.size() / 2;
  return rest.size() % 2 ? rest[m] : 0.5 * (rest[m - 1] + rest[m]);
}

std::string replicas_name(int n) { return fmt::format("{} replica{}", n, n == 1 ? "" : "s"); }

int base_replicas(const SweepOptions& o) { return int(o.base.devices.size()); }

void check_replicas_axis(const SweepOptions& o, std::string_view what) {
  MB_CHECK(base_replicas(o) >= 2, ConfigError,
           "a sweep over {} compares 1 to N replicas: pick at least 2 devices (got {})", what,
           format_devices(o.base.devices));
}

std::vector<std::string_view> entries(std::string_view list) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < list.size()) {
    const std::size_t end = list.find_first_of(", \t", i);
    const std::string_view word = list.substr(i, end == std::string_view::npos ? std::string_view::npos : end - i);
    if (!word.empty()) out.push_back(word);
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return out;
}

}  // namespace

std::vector<ModelSpec> parse_sweep_models(std::string_view list, std::string_view flag) {
  std::vector<ModelSpec> out;
  for (const std::string_view word : entries(list)) {
    try {
      out.push_back(model_from_source(word));   // a preset, a layer text or a Keras file
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: \"{}\": {}", flag, word, e.what()));
    }
  }
  MB_CHECK(!out.empty(), ConfigError, "{}: give at least one model, e.g. reference,dense:1024,dense:4096", flag);
  return out;
}

std::vector<SimulatedLink> parse_sweep_links(std::string_view list, std::string_view flag) {
  std::vector<SimulatedLink> out;
  for (const std::string_view word : entries(list)) out.push_back(simulated_link_from_text(word, flag));
  MB_CHECK(!out.empty(), ConfigError, "{}: give at least one link (GBIT[:US] or off), e.g. off,10:25,1:50", flag);
  return out;
}

std::string sweep_models_text(const std::vector<ModelSpec>& models) {
  std::string out;
  for (const ModelSpec& m : models) out += (out.empty() ? "" : ", ") + m.name();
  return out;
}

std::vector<Scenario> SweepOptions::default_sweep_remedies() {
  Scenario accumulate, bf16, overlap;
  accumulate.accumulate = 8;
  bf16.allreduce_dtype = WireDtype::Bf16;
  overlap.bucket_mb = 25;
  return {accumulate, bf16, overlap};
}

std::vector<Scenario> parse_sweep_remedies(std::string_view list, std::string_view flag) {
  std::vector<Scenario> out;
  for (const std::string_view word : entries(list)) {
    Scenario r;
    std::size_t at = 0;
    while (at <= word.size()) {
      const std::size_t plus = word.find('+', at);
      const std::string_view part = word.substr(at, plus == std::string_view::npos ? std::string_view::npos : plus - at);
      if (part == "none" || part == "bare") {
      } else if (part == "bf16" || part == "fp16" || part == "fp32") {
        set_scenario_text(r, "allreduce_dtype", part);
      } else if (part.starts_with("accumulate:")) {
        set_scenario_text(r, "accumulate", part.substr(11));
      } else if (part.starts_with("bucket:")) {
        set_scenario_text(r, "bucket_mb", part.substr(7));
      } else if (part.starts_with("powersgd:")) {
        set_scenario_text(r, "powersgd", part.substr(9));
      } else if (part.starts_with("loaders:")) {
        set_scenario_text(r, "loaders", part.substr(8));
        MB_CHECK(r.input.loaders > 0, ConfigError, "{}: loaders:{} — give at least 1 loader", flag, part.substr(8));
      } else if (part.starts_with("prefetch:")) {
        set_scenario_text(r, "prefetch", part.substr(9));
      } else {
        throw ConfigError(fmt::format("{}: \"{}\" is not a remedy: none, accumulate:K, bf16, fp16, bucket:MB, "
                                      "powersgd:RANK, loaders:N, prefetch:STEPS, or several joined by '+'",
                                      flag, part));
      }
      if (plus == std::string_view::npos) break;
      at = plus + 1;
    }
    out.push_back(r);
  }
  MB_CHECK(!out.empty(), ConfigError, "{}: give at least one remedy, e.g. accumulate:8,bf16,bucket:25", flag);
  return out;
}

namespace {
bool input_remedy(const Scenario& r) {
  return r.input.loaders != InputSettings{}.loaders || r.input.prefetch != InputSettings{}.prefetch;
}
}  // namespace

bool is_sweep_remedy(const Scenario& r) { return r.comm_remedy() || input_remedy(r); }

void apply_sweep_remedy(Scenario& s, const Scenario& remedy) {
  s.take_remedy(remedy);
  if (remedy.input.loaders != InputSettings{}.loaders) s.input.loaders = remedy.input.loaders;
  if (remedy.input.prefetch != InputSettings{}.prefetch) s.input.prefetch = remedy.input.prefetch;
}

std::string remedy_name(const Scenario& r) {
  std::vector<std::string> parts;
  if (r.accumulate > 1) parts.push_back(fmt::format("accumulate {}", r.accumulate));
  if (r.allreduce_dtype != WireDtype::Fp32) parts.push_back(fmt::format("{} all-reduce", wire_name(r.allreduce_dtype)));
  if (r.powersgd_rank > 0) parts.push_back(fmt::format("PowerSGD rank {}", r.powersgd_rank));
  if (r.bucket_mb > 0) parts.push_back(fmt::format("overlap, {:g} MB buckets", r.bucket_mb));
  if (r.input.loaders > 0) parts.push_back(fmt::format("{} loader{}", r.input.loaders, r.input.loaders == 1 ? "" : "s"));
  if (r.input.prefetch != InputSettings{}.prefetch) parts.push_back(fmt::format("prefetch {}", r.input.prefetch));
  return parts.empty() ? std::string("bare") : fmt::format("{}", fmt::join(parts, ", "));
}

// Each remedy as parse_sweep_remedies reads it, its parts joined by '+'.
std::string sweep_remedies_text(const std::vector<Scenario>& remedies) {
  std::vector<std::string> words;
  for (const Scenario& r : remedies) {
    std::vector<std::string> parts;
    if (r.accumulate > 1) parts.push_back(fmt::format("accumulate:{}", r.accumulate));
    if (r.allreduce_dtype != WireDtype::Fp32) parts.push_back(std::string(wire_name(r.allreduce_dtype)));
    if (r.powersgd_rank > 0) parts.push_back(fmt::format("powersgd:{}", r.powersgd_rank));
    if (r.bucket_mb > 0) parts.push_back(fmt::format("bucket:{:g}", r.bucket_mb));
    if (r.input.loaders > 0) parts.push_back(fmt::format("loaders:{}", r.input.loaders));
    if (r.input.prefetch != InputSettings{}.prefetch) parts.push_back(fmt::format("prefetch:{}", r.input.prefetch));
    words.push_back(parts.empty() ? std::string("none") : fmt::format("{}", fmt::join(parts, "+")));
  }
  return fmt::format("{}", fmt::join(words, ", "));
}

std::string short_remedy_name(const Scenario& r) {
  std::vector<std::string> parts;
  if (r.accumulate > 1) parts.push_back(fmt::format("acc {}", r.accumulate));
  if (r.allreduce_dtype != WireDtype::Fp32) parts.push_back(std::string(wire_name(r.allreduce_dtype)));
  if (r.powersgd_rank > 0) parts.push_back(fmt::format("psgd {}", r.powersgd_rank));
  if (r.bucket_mb > 0) parts.push_back(fmt::format("{:g} MB", r.bucket_mb));
  if (r.input.loaders > 0) parts.push_back(fmt::format("{} ldr", r.input.loaders));
  if (r.input.prefetch != InputSettings{}.prefetch) parts.push_back(fmt::format("pf {}", r.input.prefetch));
  return parts.empty() ? std::string("bare") : fmt::format("{}", fmt::join(parts, "+"));
}

std::string sweep_links_text(const std::vector<SimulatedLink>& links) {
  std::string out;
  for (const SimulatedLink& l : links) out += (out.empty() ? "" : ", ") + simulated_link_text(l);
  return out;
}

std::string_view to_string(SweepAxis axis) {
  switch (axis) {
    case SweepAxis::Batch: return "batch";
    case SweepAxis::Model: return "model";
    case SweepAxis::Link: return "link";
    case SweepAxis::Remedy: return "remedy";
  }
  return "?";
}

std::string link_name(const SimulatedLink& link) {
  if (link.gbit <= 0) return "this machine's exchange";
  return fmt::format("simulated {:g} Gbit/s{}", link.gbit,
                     link.latency_us > 0 ? fmt::format(" ({:g} us)", link.latency_us) : std::string());
}

std::string point_name(SweepAxis axis, const SweepPoint& p) {
  switch (axis) {
    case SweepAxis::Batch:
      return fmt::format("batch {}{}", p.global_batch, p.scale_lr ? fmt::format(", lr scaled to {:g}", p.lr) : "");
    case SweepAxis::Model: return fmt::format("{} on {}", p.model.name(), replicas_name(p.replicas));
    case SweepAxis::Link:
      return p.replicas == 1 ? replicas_name(1) : fmt::format("{}, {}", replicas_name(p.replicas), link_name(p.link));
    case SweepAxis::Remedy:
      return p.replicas == 1 ? replicas_name(1) : fmt::format("{}, {}", replicas_name(p.replicas), remedy_name(p.remedy));
  }
  return {};
}

namespace {

// Each value once: a second run of the same configuration would only measure the noise.
template <typename T, typename Text>
void check_listed_once(const std::vector<T>& values, std::string_view flag, Text text) {
  for (auto at = values.begin(); at != values.end(); ++at)
    MB_CHECK(std::find(values.begin(), at, *at) == at, ConfigError, "{}: {} is listed twice", flag, text(*at));
}

SweepPoint base_point(const SweepOptions& o, int replicas) {
  SweepPoint p;
  p.replicas = replicas;
  p.global_batch = global_batch_of(o.base, replicas);
  p.lr = o.base.lr;
  p.model = o.base.model;
  p.link = o.base.scenario.link;
  p.remedy = o.base.scenario.remedy();
  return p;
}

// One replica bare (nothing to exchange, so nothing to remedy), N replicas bare, then N with
// each remedy; the link is the base's throughout.
std::vector<SweepPoint> remedy_points(const SweepOptions& o) {
  check_replicas_axis(o, "remedies");
  MB_CHECK(!o.remedies.empty(), ConfigError, "--remedies: give at least one remedy, e.g. accumulate:8,bf16,bucket:25");
  std::vector<Scenario> remedies{Scenario{}};
  for (const Scenario& r : o.remedies) {
    Scenario only = r.remedy();   // the remedy fields alone
    only.input.loaders = r.input.loaders, only.input.prefetch = r.input.prefetch;
    remedies.push_back(only);
    MB_CHECK(!input_remedy(only) || o.base.scenario.input.costs(), ConfigError,
             "--remedies {}: loaders and prefetch act on the input pipeline, which runs only with an input cost: "
             "give --input-latency or --input-cpu",
             remedy_name(only));
  }
  check_listed_once(remedies, "--remedies", [](const Scenario& r) {
    return is_sweep_remedy(r) ? remedy_name(r) : std::string("none (the bare run is always swept)");
  });
  std::vector<SweepPoint> out;
  SweepPoint one = base_point(o, 1);
  one.remedy = {};
  out.push_back(one);
  for (const Scenario& r : remedies) {
    SweepPoint p = base_point(o, base_replicas(o));
    p.remedy = r;
    out.push_back(p);
  }
  return out;
}

std::vector<SweepPoint> model_points(const SweepOptions& o) {
  check_replicas_axis(o, "models");
  MB_CHECK(!o.models.empty(), ConfigError, "--models: give at least one model");
  std::vector<SweepPoint> out;
  check_listed_once(o.models, "--models", model_name);
  for (const ModelSpec& model : o.models)
    for (int n = 1; n <= base_replicas(o); ++n) {
      SweepPoint p = base_point(o, n);
      p.model = model;
      out.push_back(p);
    }
  return out;
}

std::vector<SweepPoint> link_points(const SweepOptions& o) {
  check_replicas_axis(o, "links");
  MB_CHECK(!o.links.empty(), ConfigError, "--links: give at least one link (off: this machine's own exchange)");
  std::vector<SweepPoint> out;
  SweepPoint one = base_point(o, 1);
  one.link = {};
  out.push_back(one);
  check_listed_once(o.links, "--links", simulated_link_text);
  for (const SimulatedLink& link : o.links)
    for (int n = 2; n <= base_replicas(o); ++n) {
      SweepPoint p = base_point(o, n);
      p.link = link;
      out.push_back(p);
    }
  return out;
}

std::vector<SweepPoint> batch_points(const SweepOptions& o) {
  MB_CHECK(!o.batches.empty(), ConfigError, "--batches: give at least one batch size");
  MB_CHECK(o.reference_batch >= 1, ConfigError, "the reference batch must be at least 1");
  std::set<int64_t> seen;
  std::vector<SweepPoint> out, scaled;
  for (int64_t b : o.batches) {
    MB_CHECK(b >= 1 && b <= kMaxGlobalBatch, ConfigError, "--batches: {} is outside 1..{}", b, kMaxGlobalBatch);
    MB_CHECK(seen.insert(b).second, ConfigError, "--batches: {} is listed twice", b);
    SweepPoint p = base_point(o, base_replicas(o));
    p.global_batch = b;
    out.push_back(p);
    // At the reference batch the rule changes nothing: one run, not two identical ones.
    if (b != o.reference_batch) {
      p.scale_lr = true;
      p.lr = o.base.lr * double(b) / double(o.reference_batch);
      scaled.push_back(p);
    }
  }
  out.insert(out.end(), scaled.begin(), scaled.end());
  return out;
}

}  // namespace

std::vector<SweepPoint> sweep_points(const SweepOptions& o) {
  MB_CHECK(std::isfinite(o.target_val_acc) && o.target_val_acc > 0 && o.target_val_acc <= 1, ConfigError,
           "--target must be an accuracy in (0, 1], got {}", o.target_val_acc);
  switch (o.axis) {
    case SweepAxis::Batch: return batch_points(o);
    case SweepAxis::Model: return model_points(o);
    case SweepAxis::Link: return link_points(o);
    case SweepAxis::Remedy: return remedy_points(o);
  }
  return {};
}


std::vector<PlannedRun> make_sweep_plan(const SweepOptions& o) {
  std::vector<PlannedRun> plan;
  for (const SweepPoint& p : sweep_points(o)) {
    TrainConfig c = o.base;
    c.devices = DeviceList(o.base.devices.begin(), o.base.devices.begin() + p.replicas);
    c.model = p.model;
    c.scenario.link = p.link.on() ? p.link : SimulatedLink{};
    apply_sweep_remedy(c.scenario, p.remedy);
    if (o.axis == SweepAxis::Batch) {
      c.batch = p.global_batch;
      c.per_replica_batch = false;
      c.lr = p.lr;
      c.scale_lr = false;   // the sweep's scaling is by batch, already in lr (not by replicas)
    }
    PlannedRun run;
    run.config = c;
    plan.push_back(std::move(run));
  }
  return plan;
}

SweepResult summarize_run(const SweepPoint& point, const RunRecord& r, double target) {
  SweepResult s;
  s.point = point;
  s.run_id = r.id;
  s.status = r.status;
  s.epoch_s = steady_epoch_s(r);
  s.val_acc = r.epochs.empty() ? 0 : r.epochs.back().val_acc;
  double elapsed = 0;
  for (const auto& e : r.epochs) {
    elapsed += e.time_s;
    if (e.val_acc >= target) {
      s.time_to_target_s = elapsed;
      s.epochs_to_target = e.epoch;
      break;
    }
  }
  return s;
}

namespace {

// Batch: fastest to the target; among those that never reach it, the most accurate.
int best_batch(const std::vector<SweepResult>& results) {
  int best = -1;
  for (int i = 0; i < int(results.size()); ++i) {
    const SweepResult& r = results[std::size_t(i)];
    if (best < 0) {
      best = i;
      continue;
    }
    const SweepResult& b = results[std::size_t(best)];
    const bool better = r.time_to_target_s ? (!b.time_to_target_s || *r.time_to_target_s < *b.time_to_target_s)
                                           : (!b.time_to_target_s && r.val_acc > b.val_acc);
    if (better) best = i;
  }
  return best;
}

std::string batch_verdict(const SweepResult& b, double target) {
  return b.time_to_target_s
             ? fmt::format("best: {} reaches {:.1f} % validation accuracy in {:.1f} s of training ({} epoch(s) of "
                           "{:.2f} s)",
                           point_name(SweepAxis::Batch, b.point), 100 * target, *b.time_to_target_s, *b.epochs_to_target,
                           b.epoch_s)
             : fmt::format("no configuration reached {:.1f} %; the most accurate is {} at {:.2f} %", 100 * target,
                           point_name(SweepAxis::Batch, b.point), 100 * b.val_acc);
}

// Model, link: each point's speed-up over the one-replica run of its model.
void add_speedups(std::vector<SweepResult>& results) {
  for (SweepResult& r : results) {
    if (r.point.replicas < 2 || !(r.epoch_s > 0)) continue;
    for (const SweepResult& one : results)
      if (one.point.replicas == 1 && one.point.model == r.point.model && one.epoch_s > 0)
        r.speedup = one.epoch_s / r.epoch_s;
  }
}

// "2 replicas against 1: 1.71x with cnn-reference, 0.62x with cnn-dense4096 (below 1x: slower
// than one)"; the largest replica count's, and the best is the largest speed-up.
std::string replicas_verdict(SweepAxis axis, const std::vector<SweepResult>& results, int* best) {
  int widest = 0;
  for (const SweepResult& r : results)
    if (r.speedup) widest = std::max(widest, r.point.replicas);
  if (widest == 0) return "no configuration with more than one replica has finished yet";
  std::string parts;
  double top = 0;
  bool slower = false;
  for (int i = 0; i < int(results.size()); ++i) {
    const SweepResult& r = results[std::size_t(i)];
    if (r.point.replicas != widest || !r.speedup) continue;
    // The link by its bandwidth alone here; the table and the tips give its latency.
    const std::string what = axis == SweepAxis::Model    ? "with " + r.point.model.name()
                             : axis == SweepAxis::Remedy ? remedy_name(r.point.remedy)
                             : r.point.link.gbit > 0     ? fmt::format("over {:g} Gbit/s", r.point.link.gbit)
                                                         : std::string("over this machine's exchange");
    parts += fmt::format("{}{:.2f}x {}", parts.empty() ? "" : ", ", *r.speedup, what);
    slower = slower || *r.speedup < 1;
    if (*r.speedup > top) top = *r.speedup, *best = i;
  }
  const std::string model = axis == SweepAxis::Link     ? " of " + results.front().point.model.name()
                            : axis == SweepAxis::Remedy ? fmt::format(" of {} over {}", results.front().point.model.name(),
                                                                      link_name(results.back().point.link))
                                                        : std::string();
  return fmt::format("{} replicas{} against 1: {}{}", widest, model, parts, slower ? " (below 1x: slower than one)" : "");
}

}  // namespace

SweepSummary summarize_sweep(const std::vector<SweepPoint>& points, const std::vector<RunRecord>& records,
                             double target, SweepAxis axis) {
  SweepSummary out;
  out.axis = axis;
  out.target_val_acc = target;
  for (std::size_t i = 0; i < records.size() && i < points.size(); ++i)
    out.results.push_back(summarize_run(points[i], records[i], target));
  if (out.results.empty()) {
    out.verdict = "no configuration has finished yet";
    return out;
  }
  if (axis == SweepAxis::Batch) {
    out.best = best_batch(out.results);
    out.verdict = batch_verdict(out.results[std::size_t(out.best)], target);
    out.reached = out.results[std::size_t(out.best)].time_to_target_s.has_value();
    return out;
  }
  add_speedups(out.results);
  out.verdict = replicas_verdict(axis, out.results, &out.best);
  out.reached = out.best >= 0 && out.results[std::size_t(out.best)].speedup.value_or(0) > 1;
  return out;
}

nlohmann::json to_json(const SweepSummary& s) {
  using nlohmann::json;
  json configs = json::array();
  for (const auto& r : s.results)
    configs.push_back({{"global_batch", r.point.global_batch},
                       {"scale_lr", r.point.scale_lr},
                       {"lr", r.point.lr},
                       {"run_id", r.run_id},
                       {"status", to_string(r.status)},
                       {"epoch_s", r.epoch_s},
                       {"val_acc", r.val_acc},
                       {"time_to_target_s", r.time_to_target_s ? json(*r.time_to_target_s) : json(nullptr)},
                       {"epochs_to_target", r.epochs_to_target ? json(*r.epochs_to_target) : json(nullptr)},
                       {"model", r.point.model.name()},
                       {"replicas", r.point.replicas},
                       {"simulated_link_gbit", r.point.link.gbit},
                       {"simulated_link_latency_us", r.point.link.latency_us},
                       {"speedup", r.speedup ? json(*r.speedup) : json(nullptr)},
                       {"remedy", remedy_name(r.point.remedy)}});
  return json{{"axis", to_string(s.axis)},
              {"target_val_acc", s.target_val_acc},
              {"best", s.best >= 0 ? json(s.best) : json(nullptr)},
              {"verdict", s.verdict},
              {"configurations", std::move(configs)}};
}

std::string sweep_csv(const SweepSummary& s) {
  // The batch sweep's columns first, in their places; the model and link axes' after them.
  std::string out =
      "global_batch,scale_lr,lr,run_id,status,epoch_s,val_acc,time_to_target_s,epochs_to_target,best,"
      "model,replicas,simulated_link_gbit,simulated_link_latency_us,speedup,remedy\n";
  for (int i = 0; i < int(s.results.size()); ++i) {
    const SweepResult& r = s.results[std::size_t(i)];
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\"{}\"\n", r.point.global_batch,
                       r.point.scale_lr ? "true" : "false", r.point.lr, r.run_id, to_string(r.status), r.epoch_s,
                       r.val_acc, r.time_to_target_s ? fmt::format("{}", *r.time_to_target_s) : "",
                       r.epochs_to_target ? fmt::format("{}", *r.epochs_to_target) : "", i == s.best ? "true" : "false",
                       r.point.model.name(), r.point.replicas, r.point.link.gbit, r.point.link.latency_us,
                       r.speedup ? fmt::format("{}", *r.speedup) : "", remedy_name(r.point.remedy));
  }
  return out;
}

namespace {

// The remedy axis: each remedy's epoch, speed-up and accuracy beside the bare run's.
std::string remedies_text(const SweepSummary& s) {
  const std::string over = s.results.empty() ? std::string() : link_name(s.results.back().point.link);
  std::string out = fmt::format("over {}\n{:>36} {:>8} {:>9} {:>9} {:>8}\n", over, "remedy", "replicas", "epoch s",
                                "speed-up", "val acc");
  for (int i = 0; i < int(s.results.size()); ++i) {
    const SweepResult& r = s.results[std::size_t(i)];
    out += fmt::format("{:>36} {:>8} {:>9.2f} {:>9} {:>7.2f}%{}\n", remedy_name(r.point.remedy), r.point.replicas,
                       r.epoch_s, r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "-", 100 * r.val_acc,
                       i == s.best ? "   <- best" : "");
  }
  return out + s.verdict + "\n";
}

std::string replicas_text(const SweepSummary& s) {
  std::string out = fmt::format("{:>15} {:>30} {:>8} {:>9} {:>9} {:>8}\n", "model", "link", "replicas", "epoch s",
                                "speed-up", "val acc");
  for (int i = 0; i < int(s.results.size()); ++i) {
    const SweepResult& r = s.results[std::size_t(i)];
    out += fmt::format("{:>15} {:>30} {:>8} {:>9.2f} {:>9} {:>7.2f}%{}\n", r.point.model.name(),
                       r.point.replicas == 1 ? "-" : link_name(r.point.link), r.point.replicas, r.epoch_s,
                       r.speedup ? fmt::format("{:.2f}x", *r.speedup) : "-", 100 * r.val_acc,
                       i == s.best ? "   <- best" : "");
  }
  return out + s.verdict + "\n";
}

}  // namespace

std::string sweep_text(const SweepSummary& s) {
  if (s.axis == SweepAxis::Remedy) return remedies_text(s);
  if (s.axis != SweepAxis::Batch) return replicas_text(s);
  std::string out = fmt::format("{:>7} {:>9} {:>10} {:>9} {:>8} {:>16}\n", "batch", "lr scaled", "lr", "epoch s",
                                "val acc", fmt::format("time to {:.0f} %", 100 * s.target_val_acc));
  for (int i = 0; i < int(s.results.size()); ++i) {
    const SweepResult& r = s.results[std::size_t(i)];
    out += fmt::format("{:>7} {:>9} {:>10.6g} {:>9.2f} {:>7.2f}% {:>16}{}\n", r.point.global_batch,
                       r.point.scale_lr ? "yes" : "no", r.point.lr, r.epoch_s, 100 * r.val_acc,
                       r.time_to_target_s ? fmt::format("{:.1f} s", *r.time_to_target_s) : "not reached",
                       i == s.best ? "   <- best" : "");
  }
  out += s.verdict + "\n";
  return out;
}

}  // namespace mb

// The batch-size sweep (see sweep.h).
#include "experiment/sweep.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/train_config.h"
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

std::string point_name(const SweepPoint& p) {
  return fmt::format("batch {}{}", p.global_batch, p.scale_lr ? fmt::format(", lr scaled to {:g}", p.lr) : "");
}

}  // namespace

std::vector<SweepPoint> sweep_points(const SweepOptions& o) {
  MB_CHECK(!o.batches.empty(), ConfigError, "--batches: give at least one batch size");
  MB_CHECK(o.reference_batch >= 1, ConfigError, "the reference batch must be at least 1");
  MB_CHECK(std::isfinite(o.target_val_acc) && o.target_val_acc > 0 && o.target_val_acc <= 1, ConfigError,
           "--target must be an accuracy in (0, 1], got {}", o.target_val_acc);
  std::set<int64_t> seen;
  std::vector<SweepPoint> out, scaled;
  for (int64_t b : o.batches) {
    MB_CHECK(b >= 1 && b <= kMaxGlobalBatch, ConfigError, "--batches: {} is outside 1..{}", b, kMaxGlobalBatch);
    MB_CHECK(seen.insert(b).second, ConfigError, "--batches: {} is listed twice", b);
    out.push_back({b, false, o.base.lr});
    // At the reference batch the rule changes nothing: one run, not two identical ones.
    if (b != o.reference_batch) scaled.push_back({b, true, o.base.lr * double(b) / double(o.reference_batch)});
  }
  out.insert(out.end(), scaled.begin(), scaled.end());
  return out;
}

std::vector<PlannedRun> make_sweep_plan(const SweepOptions& o) {
  std::vector<PlannedRun> plan;
  for (const SweepPoint& p : sweep_points(o)) {
    TrainConfig c = o.base;
    c.batch = p.global_batch;
    c.per_replica_batch = false;
    c.lr = p.lr;
    c.scale_lr = false;   // the sweep's scaling is by batch, already in lr (not by replicas)
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

SweepSummary summarize_sweep(const std::vector<SweepPoint>& points, const std::vector<RunRecord>& records,
                             double target) {
  SweepSummary out;
  out.target_val_acc = target;
  for (std::size_t i = 0; i < records.size() && i < points.size(); ++i)
    out.results.push_back(summarize_run(points[i], records[i], target));
  // Fastest to the target; among those that never reach it, the most accurate.
  for (int i = 0; i < int(out.results.size()); ++i) {
    const SweepResult& r = out.results[std::size_t(i)];
    if (out.best < 0) {
      out.best = i;
      continue;
    }
    const SweepResult& b = out.results[std::size_t(out.best)];
    const bool better = r.time_to_target_s
                            ? (!b.time_to_target_s || *r.time_to_target_s < *b.time_to_target_s)
                            : (!b.time_to_target_s && r.val_acc > b.val_acc);
    if (better) out.best = i;
  }
  if (out.best < 0) {
    out.verdict = "no configuration has finished yet";
  } else {
    const SweepResult& b = out.results[std::size_t(out.best)];
    out.verdict = b.time_to_target_s
                      ? fmt::format("best: {} reaches {:.1f} % validation accuracy in {:.1f} s of training ({} "
                                    "epoch(s) of {:.2f} s)",
                                    point_name(b.point), 100 * target, *b.time_to_target_s, *b.epochs_to_target,
                                    b.epoch_s)
                      : fmt::format("no configuration reached {:.1f} %; the most accurate is {} at {:.2f} %",
                                    100 * target, point_name(b.point), 100 * b.val_acc);
  }
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
                       {"epochs_to_target", r.epochs_to_target ? json(*r.epochs_to_target) : json(nullptr)}});
  return json{{"target_val_acc", s.target_val_acc},
              {"best", s.best >= 0 ? json(s.best) : json(nullptr)},
              {"verdict", s.verdict},
              {"configurations", std::move(configs)}};
}

std::string sweep_csv(const SweepSummary& s) {
  std::string out = "global_batch,scale_lr,lr,run_id,status,epoch_s,val_acc,time_to_target_s,epochs_to_target,best\n";
  for (int i = 0; i < int(s.results.size()); ++i) {
    const SweepResult& r = s.results[std::size_t(i)];
    out += fmt::format("{},{},{},{},{},{},{},{},{},{}\n", r.point.global_batch, r.point.scale_lr ? "true" : "false",
                       r.point.lr, r.run_id, to_string(r.status), r.epoch_s, r.val_acc,
                       r.time_to_target_s ? fmt::format("{}", *r.time_to_target_s) : "",
                       r.epochs_to_target ? fmt::format("{}", *r.epochs_to_target) : "", i == s.best ? "true" : "false");
  }
  return out;
}

std::string sweep_text(const SweepSummary& s) {
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

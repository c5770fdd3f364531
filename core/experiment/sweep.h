// A sweep: one plan of runs that differ along one axis, and the summary of their records.
// - Batch (the seed's bonus experiment): the same model over a range of global batch sizes,
//   with and without the linear learning-rate scaling rule (lr x batch / reference batch),
//   compared by time per epoch, validation accuracy and time to reach a target validation
//   accuracy (MLPerf's time-to-train idea).
// - Model or link (the lesson "why more GPUs made it slower"): each what-if model, or each
//   simulated link, on 1 to N replicas (N: the base's devices), compared by time per epoch
//   and speed-up over one replica of the same model.
// - Remedy (its second half, "what to do about it"): one replica, then N replicas bare and with
//   each remedy for communication (accumulation, a compressed all-reduce, overlap in buckets),
//   over the base's link: epoch time, speed-up and validation accuracy side by side. The input
//   pipeline's remedies (more loaders, a deeper prefetch) are on this axis too, over the base's
//   input cost: how many loaders does this cost need?
// The CLI's `sweep` and the GUI's Sweep plan share this.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "comm/simulated_link.h"
#include "experiment/plans.h"
#include "model/model_spec.h"
#include "records/run_record.h"

namespace mb {

enum class SweepAxis { Batch, Model, Link, Remedy };
std::string_view to_string(SweepAxis axis);   // "batch", "model", "link", "remedy"

struct SweepOptions {
  TrainConfig base;                                    // devices, epochs, data, seed, base lr ...
  SweepAxis axis = SweepAxis::Batch;
  std::vector<int64_t> batches = {64, 128, 256, 512, 1024};
  int64_t reference_batch = 128;                       // the batch base.lr belongs to
  std::vector<ModelSpec> models = {ModelSpec{}, reference_family(1024), reference_family(4096)};
  // Gbit/s and latency per hop, as the GUI's presets (0 Gbit/s: this machine's own exchange).
  std::vector<SimulatedLink> links = {{0, 0}, {100, 3}, {10, 25}, {1, 50}};
  // Each remedy as the scenario's remedy fields (accumulate, allreduce_dtype, bucket_mb).
  std::vector<Scenario> remedies = default_sweep_remedies();
  double target_val_acc = 0.85;

  static std::vector<Scenario> default_sweep_remedies();   // accumulate 8, bf16, overlap 25 MB
};

struct SweepPoint {
  int64_t global_batch = 0;
  bool scale_lr = false;   // lr scaled linearly with the batch
  double lr = 0;
  ModelSpec model;         // the base's, but along the model axis
  SimulatedLink link;      // gbit 0: none (the base's, but along the link axis)
  int replicas = 1;        // the first `replicas` of the base's devices
  Scenario remedy;         // its remedy fields: the base's, but along the remedy axis (none: bare);
                           // with the input pipeline's loaders and prefetch where the remedy sets them
  bool operator==(const SweepPoint&) const = default;
};

// The lists as typed ("reference, dense:1024, dense:4096"; "off, 100:3, 10:25, 1:50"): commas
// or spaces between entries; ConfigError naming `flag` and the entry.
std::vector<ModelSpec> parse_sweep_models(std::string_view list, std::string_view flag = "--models");
std::vector<SimulatedLink> parse_sweep_links(std::string_view list, std::string_view flag = "--links");
// "accumulate:8, bf16, fp16, bucket:25, accumulate:8+bf16, loaders:4, loaders:8+prefetch:8"
// (none: bare, which the axis runs anyway). A remedy is a Scenario with only its remedy fields
// set: the communication remedies (Scenario::take_remedy's) and the input pipeline's loaders and
// prefetch (which replace the base's; the bare run keeps the base's own).
std::vector<Scenario> parse_sweep_remedies(std::string_view list, std::string_view flag = "--remedies");
bool is_sweep_remedy(const Scenario& remedy);       // any remedy field set (not bare)
void apply_sweep_remedy(Scenario& scenario, const Scenario& remedy);
std::string remedy_name(const Scenario& remedy);   // "bare", "accumulate 8, bf16 all-reduce", ...
std::string short_remedy_name(const Scenario& remedy);   // "bare", "acc 8+bf16", "25 MB": a chart's category
std::string sweep_remedies_text(const std::vector<Scenario>& remedies);   // what parse_sweep_remedies reads
std::string sweep_models_text(const std::vector<ModelSpec>& models);
std::string sweep_links_text(const std::vector<SimulatedLink>& links);

// Batch: each batch without scaling, then (where it changes the lr) with it. Model: each model
// on 1..N replicas. Link: one replica without a link (a link changes nothing there), then each
// link on 2..N replicas. Remedy: one replica bare, then N replicas bare and with each remedy.
// Throws ConfigError for an empty or impossible list, or an axis of
// replicas with a single device.
std::vector<SweepPoint> sweep_points(const SweepOptions& options);
// One planned run per point (global batch mode, lr as the point says).
std::vector<PlannedRun> make_sweep_plan(const SweepOptions& options);

struct SweepResult {
  SweepPoint point;
  std::optional<double> speedup;           // model, link: one replica's epoch time (same model) / this one's
  std::string run_id;
  RunStatus status = RunStatus::Completed;
  double epoch_s = 0;                      // steady state: median of epochs 2..n (mean below 3 epochs)
  double val_acc = 0;                      // after the last epoch
  std::optional<double> time_to_target_s;  // training time until the first epoch at the target
  std::optional<int> epochs_to_target;
};

struct SweepSummary {
  SweepAxis axis = SweepAxis::Batch;
  double target_val_acc = 0;
  std::vector<SweepResult> results;        // in plan order
  int best = -1;                           // index into results, -1 when there are none
  std::string verdict;                     // one sentence naming the best configuration and why
  // Whether the verdict is good news, for the colour a headline gives it: a batch reached the
  // target, or more replicas were faster than one (speed-up above 1); false when none did or
  // nothing has finished.
  bool reached = false;
};

SweepResult summarize_run(const SweepPoint& point, const RunRecord& record, double target_val_acc);
// records[i] is the run of points[i] (fewer records: the sweep was stopped). The best: batch,
// the fastest to the target; model and link, the largest speed-up.
SweepSummary summarize_sweep(const std::vector<SweepPoint>& points, const std::vector<RunRecord>& records,
                             double target_val_acc, SweepAxis axis = SweepAxis::Batch);

// "batch 256, lr scaled to 0.002", "cnn-dense4096 on 2 replicas", "2 replicas, simulated 1 Gbit/s"
std::string point_name(SweepAxis axis, const SweepPoint& point);
std::string link_name(const SimulatedLink& link);   // "this machine's exchange", "simulated 1 Gbit/s"

// {"axis", "target_val_acc", "best", "verdict", "configurations": [...]}
nlohmann::json to_json(const SweepSummary& summary);
std::string sweep_csv(const SweepSummary& summary);
std::string sweep_text(const SweepSummary& summary);   // the table a terminal shows

}  // namespace mb

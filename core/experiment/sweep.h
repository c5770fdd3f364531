// The seed's bonus experiment as one plan: train the same model over a range of global batch
// sizes, with and without the linear learning-rate scaling rule (lr x batch / reference
// batch), and compare time per epoch, validation accuracy and time to reach a target
// validation accuracy (MLPerf's time-to-train idea). The CLI's `sweep` and the GUI's Sweep
// plan share this: the plan, and the summary of its records.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "experiment/plans.h"
#include "records/run_record.h"

namespace mb {

struct SweepOptions {
  TrainConfig base;                                    // devices, epochs, data, seed, base lr ...
  std::vector<int64_t> batches = {64, 128, 256, 512, 1024};
  int64_t reference_batch = 128;                       // the batch base.lr belongs to
  double target_val_acc = 0.85;
};

struct SweepPoint {
  int64_t global_batch = 0;
  bool scale_lr = false;   // lr scaled linearly with the batch
  double lr = 0;
};

// Each batch without scaling, then (where it changes the lr) with it; throws ConfigError for
// an empty or impossible list.
std::vector<SweepPoint> sweep_points(const SweepOptions& options);
// One planned run per point (global batch mode, lr as the point says).
std::vector<PlannedRun> make_sweep_plan(const SweepOptions& options);

struct SweepResult {
  SweepPoint point;
  std::string run_id;
  RunStatus status = RunStatus::Completed;
  double epoch_s = 0;                      // steady state: median of epochs 2..n (mean below 3 epochs)
  double val_acc = 0;                      // after the last epoch
  std::optional<double> time_to_target_s;  // training time until the first epoch at the target
  std::optional<int> epochs_to_target;
};

struct SweepSummary {
  double target_val_acc = 0;
  std::vector<SweepResult> results;        // in plan order
  int best = -1;                           // index into results, -1 when there are none
  std::string verdict;                     // one sentence naming the best configuration and why
};

SweepResult summarize_run(const SweepPoint& point, const RunRecord& record, double target_val_acc);
// records[i] is the run of points[i] (fewer records: the sweep was stopped).
SweepSummary summarize_sweep(const std::vector<SweepPoint>& points, const std::vector<RunRecord>& records,
                             double target_val_acc);

nlohmann::json to_json(const SweepSummary& summary);   // {"target_val_acc", "best", "verdict", "configurations": [...]}
std::string sweep_csv(const SweepSummary& summary);
std::string sweep_text(const SweepSummary& summary);   // the table a terminal shows

}  // namespace mb

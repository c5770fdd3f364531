// Which stored run is the single-device baseline for a given run, and how a run compares
// with it (epoch-time reduction, speedup, the reference experiment's two criteria).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

// Runs are compared only with runs of the same data set (and size), model, per-device
// workload and device kind. For a run in per-replica-batch mode the baseline is the single
// device run with that per-replica batch (weak scaling); otherwise the same global batch.
std::string baseline_key(const RunConfig& config);
std::string describe_baseline_key(const RunConfig& config);   // for tooltips and messages

// The baseline of a configuration: the pinned run if it still exists, else the most recent
// completed single-device run with the same key. nullptr when there is none.
const RunRecord* find_baseline(const std::vector<RunRecord>& runs,
                               const std::map<std::string, std::string>& pins, const RunConfig& config);

struct EpochTimeComparison {
  double baseline_s = 0, run_s = 0;   // mean time per epoch
  double reduction = 0;               // 1 - run/baseline: 0.42 means "−42 %"
  double speedup = 0;                 // baseline/run
};
std::optional<EpochTimeComparison> compare_epoch_time(const RunRecord& baseline, const RunRecord& run);

// The classic task's settings, which the Reference experiment presets: the reference model,
// 5 epochs, global batch 128, Adam 0.001 unscaled, the whole of Fashion-MNIST. A run record
// does not say whether the data were limited, so "whole" is judged by the image counts.
struct ClassicTask {
  static constexpr const char* kModel = "cnn-reference";
  static constexpr int kEpochs = 5;
  static constexpr int64_t kGlobalBatch = 128;
  static constexpr double kLearningRate = 1e-3;
  static constexpr int64_t kTrainImages = 60000, kValImages = 10000;
};

// The classic task's criteria: time per epoch down by at least 40 % and validation accuracy
// above 80 %. They can be applied to any comparison; they mean "the classic task" only when
// the run used ClassicTask's settings (see classic_task_differences() in chart_content.h).
struct ReferenceVerdict {
  static constexpr double kMinReduction = 0.40;
  static constexpr double kMinValAcc = 0.80;
  std::optional<EpochTimeComparison> time;
  double val_acc = 0;                 // final validation accuracy of the multi-device run
  bool time_ok = false, acc_ok = false;
  bool passed() const { return time_ok && acc_ok; }
};
ReferenceVerdict judge_reference(const RunRecord& baseline, const RunRecord& run);

}  // namespace mb

// How a run compares with its baseline (epoch time, speedup) and the classic task's verdict:
// time per epoch down by at least 40 % with validation accuracy still above 80 %.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

struct EpochTimeComparison {
  double baseline_s = 0, run_s = 0;   // mean time per epoch
  double reduction = 0;               // 1 - run/baseline: 0.42 means "-42 %"
  double speedup = 0;                 // baseline/run
};
// nullopt when either run has no epoch time to compare.
std::optional<EpochTimeComparison> compare_epoch_time(const RunRecord& baseline, const RunRecord& run);

// The classic task's settings, which the Reference experiment presets: the reference model,
// 5 epochs, global batch 128, Adam 0.001 unscaled, the whole of Fashion-MNIST. A run record
// does not say whether the data were limited, so "whole" is judged by the image counts.
struct ClassicTask {
  static bool is_model(const ModelSpec& model) { return model.is_reference(); }
  static constexpr int kEpochs = 5;
  static constexpr int64_t kGlobalBatch = 128;
  static constexpr double kLearningRate = 1e-3;
  static constexpr int64_t kTrainImages = 60000, kValImages = 10000;
};

// How a run's settings differ from ClassicTask's, in English, e.g. {"1 epoch", "2,048 training
// images"}; empty when the run is the classic task.
std::vector<std::string> classic_task_differences(const RunConfig& config);

// The classic task's criteria applied to a run and its baseline. They can be applied to any
// comparison; they mean "the classic task" only when `differences` is empty.
struct ReferenceVerdict {
  static constexpr double kMinReduction = 0.40;   // at least: exactly 40 % passes
  static constexpr double kMinValAcc = 0.80;      // strictly above: exactly 80 % fails
  std::optional<EpochTimeComparison> time;
  double val_acc = 0;                 // final validation accuracy of the run (not its best epoch)
  bool time_ok = false, acc_ok = false;
  std::vector<std::string> differences;   // classic_task_differences(run.config)
  std::string mode;                       // which training ran: "lock-step" or "balanced shares"

  bool passed() const { return time_ok && acc_ok; }
  bool is_classic_task() const { return differences.empty(); }
};
ReferenceVerdict judge_reference(const RunRecord& baseline, const RunRecord& run);

// The criteria are about mirrored training: they are judged for runs on two or more
// replicas with at least one finished epoch (a single-device run is only compared).
bool criteria_apply(const RunRecord& run);

}  // namespace mb

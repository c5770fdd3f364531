// Comparison arithmetic and the classic task's criteria (no I/O, no Qt: easy to test).
#include "experiment/verdict.h"

#include <cmath>

#include <fmt/format.h>

#include "config/train_options.h"

namespace mb {

namespace {

// "60,000": the differences are written in English, whatever the locale.
std::string grouped(int64_t n) {
  const std::string digits = std::to_string(n);
  const std::size_t sign = n < 0 ? 1 : 0;
  std::string out = digits.substr(0, sign);
  for (std::size_t i = sign; i < digits.size(); ++i) {
    if (i > sign && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string count_of(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", grouped(n), n == 1 ? one : many);
}

}  // namespace

std::optional<EpochTimeComparison> compare_epoch_time(const RunRecord& baseline, const RunRecord& run) {
  const double b = baseline.mean_epoch_time();
  const double r = run.mean_epoch_time();
  if (!(b > 0) || !(r > 0)) return std::nullopt;   // also refuses NaN
  return EpochTimeComparison{b, r, 1.0 - r / b, b / r};
}

std::vector<std::string> classic_task_differences(const RunConfig& c) {
  std::vector<std::string> d;
  if (!ClassicTask::is_model(c.model)) d.push_back("model " + c.model.name());
  // A simulated straggler or link times a demonstration, not this machine.
  for (std::string& tag : scenario_tags(c.scenario, ScenarioEffect::Simulated)) d.push_back(std::move(tag));
  if (c.epochs != ClassicTask::kEpochs) d.push_back(count_of(c.epochs, "epoch", "epochs"));
  if (c.global_batch != ClassicTask::kGlobalBatch) d.push_back("global batch " + grouped(c.global_batch));
  if (std::fabs(c.learning_rate - ClassicTask::kLearningRate) > 1e-12)
    d.push_back(fmt::format("learning rate {:g}", c.learning_rate));
  if (c.train_size != ClassicTask::kTrainImages)
    d.push_back(count_of(c.train_size, "training image", "training images"));
  if (c.val_size != ClassicTask::kValImages)
    d.push_back(count_of(c.val_size, "validation image", "validation images"));
  return d;
}

ReferenceVerdict judge_reference(const RunRecord& baseline, const RunRecord& run) {
  ReferenceVerdict v;
  v.time = compare_epoch_time(baseline, run);
  v.val_acc = run.epochs.empty() ? 0.0 : run.epochs.back().val_acc;   // the trained model's, not a peak
  v.time_ok = v.time && v.time->reduction >= ReferenceVerdict::kMinReduction;
  v.acc_ok = v.val_acc > ReferenceVerdict::kMinValAcc;
  v.differences = classic_task_differences(run.config);
  v.mode = run.config.scenario.balanced() ? "balanced shares" : "lock-step";
  return v;
}

bool criteria_apply(const RunRecord& run) { return run.config.replicas > 1 && !run.epochs.empty(); }

}  // namespace mb

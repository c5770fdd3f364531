// Baseline selection and comparison arithmetic (no Qt: easy to reason about and to test).
#include "baseline.h"

#include <fmt/format.h>

namespace mb {

namespace {

std::string device_kind(const RunConfig& c) { return c.devices.rfind("cuda", 0) == 0 ? "cuda" : "cpu"; }

int64_t compared_batch(const RunConfig& c) {
  return c.per_replica_batch_mode && c.replicas > 1 ? c.per_replica_batch : c.global_batch;
}

}  // namespace

std::string baseline_key(const RunConfig& c) {
  return fmt::format("{}|{}|{}|{}|{}|{}", c.dataset, c.train_size, c.model, compared_batch(c),
                     device_kind(c), c.backend);
}

std::string describe_baseline_key(const RunConfig& c) {
  return fmt::format("{} ({} training images), {}, batch {}, {} ({})", c.dataset, c.train_size, c.model,
                     compared_batch(c), device_kind(c), c.backend);
}

const RunRecord* find_baseline(const std::vector<RunRecord>& runs,
                               const std::map<std::string, std::string>& pins, const RunConfig& config) {
  const std::string key = baseline_key(config);
  if (auto it = pins.find(key); it != pins.end()) {
    for (const auto& r : runs) {
      if (r.id == it->second) return &r;
    }
  }
  const RunRecord* best = nullptr;
  for (const auto& r : runs) {
    if (r.config.replicas != 1 || r.status != "completed" || r.epochs.empty()) continue;
    if (baseline_key(r.config) != key) continue;
    if (!best || r.config.start_time >= best->config.start_time) best = &r;
  }
  return best;
}

std::optional<EpochTimeComparison> compare_epoch_time(const RunRecord& baseline, const RunRecord& run) {
  const double b = baseline.mean_epoch_time();
  const double r = run.mean_epoch_time();
  if (b <= 0 || r <= 0) return std::nullopt;
  return EpochTimeComparison{b, r, 1.0 - r / b, b / r};
}

ReferenceVerdict judge_reference(const RunRecord& baseline, const RunRecord& run) {
  ReferenceVerdict v;
  v.time = compare_epoch_time(baseline, run);
  v.val_acc = run.epochs.empty() ? 0.0 : run.epochs.back().val_acc;   // the trained model's, not a peak
  v.time_ok = v.time && v.time->reduction >= ReferenceVerdict::kMinReduction;
  v.acc_ok = v.val_acc > ReferenceVerdict::kMinValAcc;
  return v;
}

}  // namespace mb

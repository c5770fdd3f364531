// Run plans.
#include "experiment/plans.h"

#include "experiment/verdict.h"
#include "util/error.h"

namespace mb {

std::string_view to_string(PlanKind kind) {
  switch (kind) {
    case PlanKind::Single: return "Run";
    case PlanKind::Compare: return "Compare";
    case PlanKind::Reference: return "Reference experiment";
    case PlanKind::Sweep: return "Sweep";
  }
  return "Run";   // not reached: every enumerator is handled above
}

TrainConfig reference_config(TrainConfig c, const std::string& devices) {
  c.devices = devices;
  c.epochs = ClassicTask::kEpochs;
  c.batch = ClassicTask::kGlobalBatch;
  c.per_replica_batch = false;
  c.lr = ClassicTask::kLearningRate;
  c.scale_lr = false;
  c.limit_train = 0;
  c.limit_val = 0;
  return c;
}

std::string baseline_device(const std::string& devices) {
  if (devices.rfind("cuda", 0) == 0) return devices.substr(0, devices.find(','));
  return "cpu:1";
}

std::vector<PlannedRun> make_plan(PlanKind kind, const TrainConfig& config, const std::string& single_device,
                                  int processes, const std::string& hostfile) {
  const PlannedRun run{config, RunRole::Run, processes, hostfile};
  if (kind == PlanKind::Single) return {run};
  MB_CHECK(kind != PlanKind::Sweep, ConfigError, "a sweep's plan needs its batch sizes: use make_sweep_plan");
  TrainConfig baseline = config;
  baseline.devices = single_device;
  // The baseline is the honest single device: a simulated straggler belongs to the run only.
  baseline.slow_replica = -1;
  baseline.slow_factor = 1.0;
  // Per-replica mode on one device is the same global batch as the multi-device per-replica
  // batch: the baseline does the same work per device (weak scaling).
  return {PlannedRun{baseline, RunRole::Baseline, 1, {}}, run};
}

}  // namespace mb

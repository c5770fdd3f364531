// Run plans.
#include "plans.h"

namespace mb {

TrainConfig reference_config(TrainConfig c, const std::string& devices) {
  c.devices = devices;
  c.epochs = 5;
  c.batch = 128;
  c.per_replica_batch = false;
  c.lr = 1e-3;
  c.scale_lr = false;
  c.limit_train = 0;
  c.limit_val = 0;
  return c;
}

std::vector<PlannedRun> make_plan(PlanKind kind, const TrainConfig& config, const std::string& single_device) {
  if (kind == PlanKind::Single) return {PlannedRun{config, QStringLiteral("run")}};
  TrainConfig baseline = config;
  baseline.devices = single_device;
  // Per-replica mode on one device is the same global batch as the multi-device per-replica
  // batch: the baseline does the same work per device (weak scaling).
  return {PlannedRun{baseline, QStringLiteral("baseline")}, PlannedRun{config, QStringLiteral("run")}};
}

}  // namespace mb

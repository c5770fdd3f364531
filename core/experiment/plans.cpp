// Run plans' vocabulary and the reference experiment's preset.
#include "experiment/plans.h"

#include "experiment/verdict.h"

namespace mb {

std::string_view to_string(PlanKind kind) {
  switch (kind) {
    case PlanKind::Single: return "Run";
    case PlanKind::Compare: return "Compare";
    case PlanKind::Reference: return "Reference experiment";
    case PlanKind::Sweep: return "Sweep";
    case PlanKind::Balance: return "Lock-step vs balanced";
    case PlanKind::Remedy: return "Bare vs remedy";
  }
  return "Run";   // not reached: every enumerator is handled above
}

TrainConfig reference_config(TrainConfig c, const DeviceList& devices) {
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

TrainConfig reference_request(const TrainConfig& fields, int processes, const DeviceList& all_devices) {
  return reference_config(fields, processes > 1 || all_devices.empty() ? fields.devices : all_devices);
}

DeviceList baseline_devices(const DeviceList& devices) {
  if (device_kind(devices) == DeviceKind::Cuda && !devices.empty())
    return {{DeviceKind::Cuda, devices.front().index == kLocalGpu ? 0 : devices.front().index}};
  return cpu_replicas(1);
}

}  // namespace mb

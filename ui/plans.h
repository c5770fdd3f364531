// What Run, Compare and the Reference experiment ask the trainer to do: the configurations,
// in order, built from the setup panel's configuration.
#pragma once
#include <string>
#include <vector>

#include "run_controller.h"

namespace mb {

// The classic task: the reference model, 5 epochs, global batch 128, Adam 0.001 unscaled,
// the whole data set, on `devices` (against one device).
TrainConfig reference_config(TrainConfig base, const std::string& devices);

// The device of the single-device baseline for a device list: the first GPU of a GPU run,
// else one CPU replica ("cpu:1").
std::string baseline_device(const std::string& devices);

// Single: [config]. Compare and Reference: [config on `single_device` (role "baseline"), config].
std::vector<PlannedRun> make_plan(PlanKind kind, const TrainConfig& config, const std::string& single_device);

}  // namespace mb

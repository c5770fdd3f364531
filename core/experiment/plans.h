// What Run, Compare, the Reference experiment and the Sweep ask the trainer to do: the
// configurations, in order, each with its role in the plan. Front ends (the GUI's run controller, a CLI)
// execute a plan; they do not decide what is in it.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "trainer/train_config.h"

namespace mb {

// Sweep: one run per batch size, with and without lr scaling (make_sweep_plan in
// experiment/sweep.h, not make_plan).
enum class PlanKind { Single, Compare, Reference, Sweep };
std::string_view to_string(PlanKind kind);   // "Run", "Compare", "Reference experiment", "Sweep" (logs)

// What a run is for within its plan.
enum class RunRole {
  Run,        // the run the user asked for
  Baseline,   // the single-device run it is compared with (pinned as the baseline when it completes)
};

struct PlannedRun {
  TrainConfig config;
  RunRole role = RunRole::Run;
  // 1: in the front end's own process. N > 1: N processes under mpirun, each with
  // config.devices (mirrorbench-cli train), on this machine only, or on the hosts of
  // `hostfile` when it is not empty.
  int processes = 1;
  std::string hostfile;
};

// The classic task (ClassicTask in verdict.h): the reference model, 5 epochs, global batch
// 128, Adam 0.001 unscaled, the whole data set, on `devices`. Everything else is kept.
TrainConfig reference_config(TrainConfig base, const std::string& devices);

// The device of the single-device baseline for a device list: the first GPU of a GPU run,
// else one CPU replica ("cpu:1").
std::string baseline_device(const std::string& devices);

// Single: [config]. Compare and Reference: [config on `single_device` (RunRole::Baseline),
// config]. A comparison needs two or more devices; the caller checks config.devices differs
// from single_device, or that the run has several processes. The run the user asked for gets
// `processes` and `hostfile`; the baseline always runs in one process, without a simulated
// straggler. Sweep: ConfigError (its plan needs the sweep's options: make_sweep_plan).
std::vector<PlannedRun> make_plan(PlanKind kind, const TrainConfig& config, const std::string& single_device,
                                  int processes = 1, const std::string& hostfile = {});

}  // namespace mb

// What Run, Compare, the Reference experiment and the Sweep ask the trainer to do: the
// configurations, in order, each with its role in the plan and where it trains. Plans are
// made and checked by experiment/planner.h and run by experiment/plan_executor.h; front ends
// do not decide what is in them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/train_config.h"

namespace mb {

// Balance: the straggler demonstration's two runs, lock-step then balanced shares, back to back.
// Remedy: the communication remedy's demonstration: the run bare (an all-reduce every step), then
// with the chosen gradient accumulation, back to back.
enum class PlanKind { Single, Compare, Reference, Sweep, Balance, Remedy };
// "Run", "Compare", "Reference experiment", "Sweep", "Lock-step vs balanced", "Bare vs remedy" (logs)
std::string_view to_string(PlanKind kind);

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

struct Plan {
  PlanKind kind = PlanKind::Single;
  std::vector<PlannedRun> runs;
  std::vector<std::string> notes;   // what the plan changed in the request, and why (for the log)
};

// The classic task (ClassicTask in verdict.h): the reference model, 5 epochs, global batch
// 128, Adam 0.001 unscaled, the whole data set, on `devices`. Everything else is kept.
TrainConfig reference_config(TrainConfig base, const DeviceList& devices);

// The reference experiment asked from a front end's fields: the preset, on every usable
// device of this machine when the run stays in one process (`all_devices`), on the devices
// each process was given when it runs across processes.
TrainConfig reference_request(const TrainConfig& fields, int processes, const DeviceList& all_devices);

// The device of the single-device baseline for a device list: the first GPU of a GPU run
// (cuda:local: cuda:0), else one CPU replica.
DeviceList baseline_devices(const DeviceList& devices);

}  // namespace mb

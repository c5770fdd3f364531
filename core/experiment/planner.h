// From what a front end asks (a plan kind, the configuration in its fields or flags, where it
// runs) to a checked plan: the one place of the plan rules - Compare and Reference needing two
// or more devices, the baseline's device (cuda:local is compared with cuda:0), teaching pace
// for Run only, the sweep's points, lock-step vs balanced needing two or more replicas - and
// of checking every run before the first one trains.
// (The reference experiment's preset is reference_request() in plans.h: a front end applies it
// first, then the options its user gave explicitly.)
#pragma once
#include <string>
#include <vector>

#include "backends/devices.h"
#include "experiment/plans.h"
#include "experiment/sweep.h"

namespace mb {

struct PlanRequest {
  PlanKind kind = PlanKind::Single;
  TrainConfig config;             // the request; for a sweep, its base
  int processes = 1;              // > 1: the run (not its baseline) as that many processes under mpirun
  std::string hostfile;           // with processes > 1: the hosts (empty: this machine only)
  SweepOptions sweep;             // Sweep: batches, reference batch, target (its base is `config`)
};

// Builds the plan and checks every run of it (trainer/run_check.h; `machine`: this machine's
// devices for runs that stay on it). Throws ConfigError with every problem, one per line,
// each run's named when the plan has several.
Plan make_plan(const PlanRequest& request, const DeviceInventory* machine = nullptr);

}  // namespace mb

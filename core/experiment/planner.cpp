// The plan rules (see planner.h).
#include "experiment/planner.h"

#include <fmt/format.h>

#include "trainer/run_check.h"
#include "util/error.h"

namespace mb {
namespace {

std::vector<PlannedRun> comparison(PlanKind kind, const TrainConfig& config, int processes, const std::string& hostfile) {
  const DeviceList single = baseline_devices(config.devices);
  if (config.devices == single && processes < 2) {
    const std::string device = format_devices(single);
    throw ConfigError(
        kind == PlanKind::Compare
            ? fmt::format("Compare needs two or more devices: it runs {} first and then the devices you selected, "
                          "but {} is the baseline's own device",
                          device, device)
            : fmt::format("the reference experiment needs two or more devices (CPU cores or GPUs): it runs {} "
                          "first and then the devices given, but {} is the baseline's own device",
                          device, device));
  }
  TrainConfig baseline = config;
  baseline.devices = single;
  // The baseline is the honest single device: the scenario (a simulated straggler or link,
  // balanced shares) belongs to the run only.
  baseline.scenario = Scenario{};
  // Per-replica mode on one device is the same global batch as the multi-device per-replica
  // batch: the baseline does the same work per device (weak scaling). It always runs in the
  // front end's process.
  return {PlannedRun{baseline, RunRole::Baseline, 1, {}}, PlannedRun{config, RunRole::Run, processes, hostfile}};
}

// The same request twice, lock-step then balanced (a straggler, when set, in both): what
// balanced shares buy on these devices, shown side by side.
std::vector<PlannedRun> lock_step_vs_balanced(const TrainConfig& config, int processes, const std::string& hostfile) {
  const int replicas = total_replicas(config, processes);
  if (replicas < 2)
    throw ConfigError(fmt::format("Lock-step vs balanced needs two or more replicas: with {} the share is the whole "
                                  "batch either way",
                                  format_devices(config.devices)));
  TrainConfig lock_step = config, balanced = config;
  lock_step.scenario.balance = false;
  lock_step.scenario.shares_from.clear();
  balanced.scenario.balance = true;
  balanced.scenario.shares_from.clear();
  return {PlannedRun{lock_step, RunRole::Run, processes, hostfile}, PlannedRun{balanced, RunRole::Run, processes, hostfile}};
}

// The same request twice, bare then with its remedies (gradient accumulation, a compressed
// all-reduce; a simulated link, when set, in both): what the remedy buys in time, and costs in
// accuracy.
std::vector<PlannedRun> bare_vs_remedy(const TrainConfig& config, int processes, const std::string& hostfile) {
  if (!config.scenario.comm_remedy())
    throw ConfigError("Bare vs remedy: choose a remedy first (What if: Remedy, or --accumulate K with K >= 2, or "
                      "--allreduce-dtype bf16|fp16)");
  if (total_replicas(config, processes) < 2)
    throw ConfigError(fmt::format("Bare vs remedy needs two or more replicas: with {} nothing is exchanged",
                                  format_devices(config.devices)));
  TrainConfig bare = config;
  bare.scenario = config.scenario.bare();
  return {PlannedRun{bare, RunRole::Run, processes, hostfile}, PlannedRun{config, RunRole::Run, processes, hostfile}};
}

void check_plan(const Plan& plan, const DeviceInventory* machine) {
  std::string errors;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const PlannedRun& run = plan.runs[i];
    const RunSite site{run.processes, run.hostfile.empty(), machine};
    for (const RunProblem& p : check_run(run.config, site)) {
      if (!p.is_error()) continue;
      const std::string which = plan.runs.size() < 2 ? std::string()
                                : run.role == RunRole::Baseline ? std::string("the baseline: ")
                                                                : fmt::format("run {} of {}: ", i + 1, plan.runs.size());
      const std::string line = which + p.message;
      if (errors.find(line) == std::string::npos) errors += (errors.empty() ? "" : "\n") + line;
    }
  }
  if (!errors.empty()) throw ConfigError(errors);
}

}  // namespace

Plan make_plan(const PlanRequest& r, const DeviceInventory* machine) {
  Plan plan;
  plan.kind = r.kind;
  TrainConfig config = r.config;
  // Teaching pace is for following one run; a comparison at a second a step would compare waits.
  if (r.kind != PlanKind::Single && config.step_delay_s > 0) {
    config.step_delay_s = 0;
    plan.notes.push_back(fmt::format("{}: at full speed (teaching pace is for Run only)", to_string(r.kind)));
  }
  // The reference experiment is about the reference CNN; what-if models are for Run, Compare, Sweep.
  if (r.kind == PlanKind::Reference && !config.model.is_reference()) {
    plan.notes.push_back(fmt::format("Reference: trains the reference CNN, not the what-if {}", config.model.name()));
    config.model = ModelSpec{};
  }
  if (r.processes < 1) throw ConfigError(fmt::format("a run needs at least one process (got {})", r.processes));
  const std::string hostfile = r.processes > 1 ? r.hostfile : std::string();
  switch (r.kind) {
    case PlanKind::Single: plan.runs = {PlannedRun{config, RunRole::Run, r.processes, hostfile}}; break;
    case PlanKind::Compare:
    case PlanKind::Reference: plan.runs = comparison(r.kind, config, r.processes, hostfile); break;
    case PlanKind::Balance: plan.runs = lock_step_vs_balanced(config, r.processes, hostfile); break;
    case PlanKind::Remedy: plan.runs = bare_vs_remedy(config, r.processes, hostfile); break;
    case PlanKind::Sweep: {
      SweepOptions sweep = r.sweep;
      sweep.base = config;
      if (sweep.axis != SweepAxis::Batch && r.processes > 1)
        throw ConfigError(fmt::format("a sweep over the {} runs 1 to N replicas in one process (got {} processes)",
                                      to_string(sweep.axis), r.processes));
      plan.runs = make_sweep_plan(sweep);   // impossible lists are reported before any training
      for (PlannedRun& run : plan.runs) run.processes = r.processes, run.hostfile = hostfile;
      break;
    }
  }
  if (r.processes > 1)
    plan.notes.push_back(fmt::format("{}: the run as {} processes under mpirun{}", to_string(r.kind), r.processes,
                                     hostfile.empty() ? std::string(" on this machine") : " on the hosts of " + hostfile));
  check_plan(plan, machine);
  return plan;
}

}  // namespace mb

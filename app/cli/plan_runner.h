// Runs a plan in this process for the CLI's reference and sweep commands (the core's plan
// executor: experiment/plan_executor.h): one progress printer per run, Ctrl-C (or SIGTERM...)
// stopping the run in progress and the rest of the plan, every finished run saved to the
// history and a completed baseline pinned, as the workbench does.
#pragma once
#include <string>

#include "experiment/plan_executor.h"
#include "experiment/planner.h"
#include "experiment/run_store.h"

namespace mb::cli {

PlanOutcome run_plan(const Plan& plan, const RunStore& store);

// --history DIR, or the workbench's own history.
RunStore history_store(const std::string& dir);

}  // namespace mb::cli

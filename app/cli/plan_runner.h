// Runs a plan of several trainings back to back in this process (the CLI's reference and
// sweep commands): the data loaded once, one progress printer, Ctrl-C (or SIGTERM...) stopping
// the run in progress and the rest of the plan, every finished run saved to the history.
#pragma once
#include <filesystem>
#include <optional>
#include <vector>

#include "experiment/plans.h"
#include "experiment/run_store.h"
#include "records/run_record.h"

namespace mb::cli {

struct PlanRun {
  std::vector<RunRecord> records;   // in plan order; fewer than planned when stopped
  bool stopped = false;
};

// `store`: where each finished run is saved (nullopt: nowhere); a baseline that completes is
// pinned there as the baseline of its configuration, as the workbench's Compare does.
PlanRun run_plan(const std::vector<PlannedRun>& plan, const std::optional<RunStore>& store);

// --history DIR, or the workbench's own history.
RunStore history_store(const std::string& dir);

}  // namespace mb::cli

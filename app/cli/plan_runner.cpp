// Plans run in the CLI (see plan_runner.h).
#include "plan_runner.h"

#include <memory>

#include <fmt/format.h>

#include "progress_printer.h"
#include "signals.h"

namespace mb::cli {

RunStore history_store(const std::string& dir) {
  return RunStore(dir.empty() ? default_history_root() : std::filesystem::path(dir));
}

PlanOutcome run_plan(const Plan& plan, const RunStore& store) {
  InProcessTrainer trainer;
  PlanExecutor executor(store, trainer);
  std::unique_ptr<ProgressPrinter> printer;
  int epochs = 0;
  PlanObserver observer;
  observer.on_run_starting = [&](int i, const PlannedRun& run) {
    fmt::print("\n[{}/{}] {}{}\n", i + 1, plan.runs.size(), run.role == RunRole::Baseline ? "baseline " : "",
               format_devices(run.config.devices));
    printer = std::make_unique<ProgressPrinter>(stdout);
    epochs = run.config.epochs;
  };
  observer.on_run_started = [&](int, const RunConfig& c) { printer->start(c); };
  observer.on_step = [&](const StepProgress& p) { printer->step(p); };
  observer.on_epoch = [&](const EpochMetrics& m) { printer->epoch(m, epochs); };
  observer.on_run_finished = [&](int, const RunRecord& record, const std::string& save_error) {
    if (save_error.empty()) fmt::print("saved run {} in {}\n", record.id, store.runs_dir().string());
    else fmt::print(stderr, "mirrorbench-cli: run {} was not saved: {}\n", record.id, save_error);
  };
  // The guard stays up for the whole plan: a signal stops the run in progress and the rest.
  StopOnSignals stop([](void* e) { static_cast<PlanExecutor*>(e)->request_stop_async(); }, &executor);
  PlanOutcome outcome = executor.run(plan, observer);
  outcome.stopped = outcome.stopped || stop.received() != 0;
  return outcome;
}

}  // namespace mb::cli

// Plans run in the CLI (see plan_runner.h).
#include "plan_runner.h"

#include <csignal>
#include <map>

#include <fmt/format.h>

#include "experiment/baseline.h"
#include "progress_printer.h"
#include "signals.h"
#include "trainer/mirrored_trainer.h"

namespace mb::cli {

RunStore history_store(const std::string& dir) {
  return RunStore(dir.empty() ? default_history_root() : std::filesystem::path(dir));
}

PlanRun run_plan(const std::vector<PlannedRun>& plan, const std::optional<RunStore>& store) {
  PlanRun out;
  std::map<std::filesystem::path, std::shared_ptr<DataSplit>> data;   // each folder loaded once
  for (std::size_t i = 0; i < plan.size() && !out.stopped; ++i) {
    const TrainConfig& config = plan[i].config;
    check_train_config(config);
    const std::filesystem::path dir = config.data_dir.empty() ? default_data_dir() : std::filesystem::path(config.data_dir);
    auto& split = data[dir];
    if (!split) split = std::make_shared<DataSplit>(load_idx_dir(dir));
    MirroredTrainer trainer(config, split);
    fmt::print("\n[{}/{}] {}{}\n", i + 1, plan.size(), plan[i].role == RunRole::Baseline ? "baseline " : "",
               config.devices);
    ProgressPrinter printer(stdout);
    TrainObserver observer;
    observer.on_start = [&](const RunConfig& c) { printer.start(c); };
    observer.on_step = [&](const StepProgress& p) { printer.step(p); };
    observer.on_epoch = [&](const EpochMetrics& m) { printer.epoch(m, config.epochs); };
    RunRecord record;
    {
      StopOnSignals stop([](void* t) { static_cast<MirroredTrainer*>(t)->request_stop(); }, &trainer);
      record = trainer.run(observer);
      out.stopped = stop.received() != 0;
    }
    if (store) {
      store->save(record);
      if (plan[i].role == RunRole::Baseline && record.status == RunStatus::Completed) {
        BaselinePins pins = store->load_pins();
        pins[baseline_key(record.config)] = record.id;
        store->save_pins(pins);
      }
      fmt::print("saved run {} in {}\n", record.id, store->runs_dir().string());
    }
    out.records.push_back(std::move(record));
    if (out.records.back().status == RunStatus::Failed) break;   // the rest would compare with nothing
  }
  return out;
}

}  // namespace mb::cli

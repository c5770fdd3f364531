// Runs a checked plan (experiment/planner.h) back to back, Qt-free, for every front end: each
// planned run on the trainer it needs (this process, or - a front end's - processes under
// mpirun), every finished run saved to the store with its Chrome trace beside it, a completed
// baseline pinned as the baseline of its configuration and every other run's baseline written
// down (the one it is compared with stays its baseline); the rest of the plan dropped when a
// run is rejected, its baseline fails or the user stops. Reports through an observer, on the
// thread that calls run() (a training thread for steps and epochs).
#pragma once
#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "experiment/plans.h"
#include "experiment/run_store.h"
#include "records/run_record.h"
#include "trainer/train_observer.h"

namespace mb {

class MirroredTrainer;

// What a run reports besides the trainer's own events: a status line ("Loading data ...").
struct RunCallbacks {
  TrainObserver train;
  std::function<void(const std::string&)> status;
};

// How one planned run is trained.
class RunTrainer {
 public:
  virtual ~RunTrainer() = default;
  // Trains `run` to its record; `trace_file` (empty: none) is where its Chrome trace goes.
  // Throws mb::Error when the run could not start (bad data, an impossible configuration, no
  // launcher): there is no record then.
  virtual RunRecord train(const PlannedRun& run, const RunCallbacks& callbacks,
                          const std::filesystem::path& trace_file) = 0;
  // Any thread: the run in progress stops at its next step (and still returns its record);
  // a run that is still starting stops as soon as it can.
  virtual void request_stop() = 0;
  // Before a run starts: a stop meant for the previous one does not carry over.
  virtual void clear_stop() = 0;
};

// The trainer in this process: a MirroredTrainer per run, data sets loaded once per folder.
class InProcessTrainer : public RunTrainer {
 public:
  RunRecord train(const PlannedRun& run, const RunCallbacks& callbacks, const std::filesystem::path& trace_file) override;
  void request_stop() override;
  void clear_stop() override { stop_.store(false); }

 private:
  std::shared_ptr<const DataSplit> data_for(const std::string& dir, const RunCallbacks& callbacks);

  std::mutex mutex_;                  // guards active_ against request_stop()
  MirroredTrainer* active_ = nullptr;
  std::atomic<bool> stop_{false};
  std::string cached_dir_;
  std::shared_ptr<const DataSplit> cached_data_;
};

struct PlanObserver {
  std::function<void(int index, const PlannedRun& run)> on_run_starting;   // before its data loads
  std::function<void(int index, const RunConfig& config)> on_run_started;  // training starts
  std::function<void(const StepProgress&)> on_step;
  std::function<void(const EpochMetrics&)> on_epoch;
  std::function<void(LogLevel, const std::string&)> on_log;
  std::function<void(const std::string&)> on_status;
  // Saved (save_error empty) or not; pinned when a completed baseline.
  std::function<void(int index, const RunRecord& record, const std::string& save_error)> on_run_finished;
  std::function<void(int index, const std::string& why)> on_run_rejected;   // no record: the plan ends
  // A replica is stuck inside a device driver (TrainObserver::on_stuck): the plan cannot end.
  std::function<void(const RunRecord& failed)> on_stuck;
};

struct PlanOutcome {
  PlanKind kind = PlanKind::Single;
  std::vector<RunRecord> records;   // in plan order; fewer than planned when it ended early
  bool ok = true;                   // every planned run completed
  bool stopped = false;             // the user stopped it
};

class PlanExecutor {
 public:
  // `store`: where runs, pins and traces go (nullopt: nowhere). `multi_process`: the trainer
  // for runs of several processes (nullptr: such runs are rejected). The trainers outlive it.
  PlanExecutor(std::optional<RunStore> store, RunTrainer& in_process, RunTrainer* multi_process = nullptr);

  // How a finished record is named before it is saved (empty: the trainer's name).
  void set_namer(std::function<std::string(const RunRecord&)> namer) { namer_ = std::move(namer); }

  // Runs the plan to its end; one plan at a time.
  PlanOutcome run(const Plan& plan, const PlanObserver& observer);
  // Any thread, also before run() began: stops the run in progress at its next step and
  // cancels the rest of the plan (and of any later plan: an executor is for one plan).
  void request_stop();
  // The same from a signal handler (one atomic store): taken up at the run's next step report.
  void request_stop_async() { async_stop_.store(true); }

 private:
  RunRecord train_one(int index, const PlannedRun& run, RunTrainer& trainer, const PlanObserver& observer,
                      std::string& save_error);
  std::string keep(const PlannedRun& run, RunRecord& record, const std::filesystem::path& trace);

  std::optional<RunStore> store_;
  RunTrainer& in_process_;
  RunTrainer* multi_process_;
  std::function<std::string(const RunRecord&)> namer_;
  std::mutex mutex_;                  // guards current_ against request_stop()
  RunTrainer* current_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<bool> async_stop_{false};
  std::string plan_baseline_;         // the plan's completed baseline run (Compare, Reference), or empty
};

}  // namespace mb

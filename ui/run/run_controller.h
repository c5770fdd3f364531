// Runs a checked plan (experiment/planner.h) for the window: the core's plan executor on a
// thread of its own (experiment/plan_executor.h: every run saved to the history with its
// trace, a completed baseline pinned), each run in this process or, when it asks for several
// processes, as mirrorbench-cli processes under mpirun (run/mpirun_trainer.h). Its signals are
// emitted on that thread and reach the window queued, as values.
#pragma once
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <optional>

#include "experiment/plan_executor.h"
#include "experiment/run_store.h"
#include "run/metatypes.h"
#include "run/mpirun_trainer.h"

class QThread;

namespace mb {

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;   // shutdown()

  bool busy() const { return thread_ != nullptr; }
  int plan_size() const { return int(plan_.runs.size()); }
  // The run in progress (or about to start) while busy.
  const PlannedRun* current_run() const;

  // What multi-process runs are started with (found on PATH and beside the executable).
  const Launcher& launcher() const { return mpirun_.launcher(); }
  void set_launcher(Launcher launcher) { mpirun_.set_launcher(std::move(launcher)); }
  MpirunTrainer& mpirun_trainer() { return mpirun_; }   // tests: grace periods
  // Where every run, its trace and the pins go (nullopt: nowhere). Before start().
  void set_store(std::optional<RunStore> store) { store_ = std::move(store); }

  void start(Plan plan);
  // Stops the run in progress at its next step and cancels the rest of the plan.
  void stop();
  // Stops, waits for the plan's thread (a child process: at most about half a minute, then it
  // is ended; the record is saved by then) and delivers its last signals - run_finished,
  // plan_finished - before returning. Afterwards busy() is false and start() does nothing.
  void shutdown();

 signals:
  void plan_started(mb::PlanKind kind, int runs);
  void run_started(int index, const mb::RunConfig& config);
  void step_progress(const mb::StepProgress& progress);
  void epoch_finished(const mb::EpochMetrics& metrics);
  // Saved in the store (save_error empty) or not.
  void run_finished(int index, const mb::RunRecord& record, const QString& save_error);
  void run_rejected(int index, const QString& message);
  // ok: every run completed; stopped: the user stopped the plan.
  void plan_finished(mb::PlanKind kind, bool ok, bool stopped);
  // A replica is stuck inside a device driver after the run failed: the plan cannot end, and
  // only a restart of the workbench frees the device (trainer/replica_threads.h).
  void device_stuck(const QString& message);
  void status(const QString& message);

 private:
  void join();   // after plan_finished: the thread is done

  InProcessTrainer in_process_;
  MpirunTrainer mpirun_;
  std::optional<RunStore> store_;
  std::unique_ptr<PlanExecutor> executor_;
  QThread* thread_ = nullptr;
  Plan plan_;
  std::atomic<int> current_{-1};
  bool closed_ = false;
};

}  // namespace mb

// Runs a plan (experiment/plans.h: one run, or a baseline followed by a multi-device run) back
// to back, each planned run on the worker it needs: the trainer on a thread of this process
// (one for the window's lifetime, so the data set stays cached), or mirrorbench-cli processes
// under mpirun when the run asks for more than one process. Lives in the GUI thread; forwards
// the workers' signals, which are the same for both.
#pragma once
#include <QObject>
#include <QPointer>
#include <QString>

#include <optional>
#include <vector>

#include "experiment/plans.h"
#include "experiment/run_store.h"
#include "run/child_command.h"
#include "run/metatypes.h"

namespace mb {

class InProcessWorker;
class RunWorker;

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;   // shutdown()

  bool busy() const { return current_ >= 0; }
  int plan_size() const { return int(plan_.size()); }
  const PlannedRun* current_run() const;

  // What multi-process runs are started with (found on PATH and beside the executable).
  const Launcher& launcher() const { return launcher_; }
  void set_launcher(Launcher launcher) { launcher_ = std::move(launcher); }
  // Every run keeps its Chrome trace in this store, beside its record (nullopt: none).
  void set_trace_store(std::optional<RunStore> store);

  void start(PlanKind kind, std::vector<PlannedRun> plan);
  // Stops the run in progress at its next step and cancels the rest of the plan.
  void stop();
  // Stops, waits for the run in progress (a child process: at most about half a minute, then
  // it is ended) and, before returning, delivers its run_finished (so a window that closes
  // mid-run still saves the partial record) and then plan_finished. A run that was queued but
  // never started has no record: the plan just ends, stopped. Afterwards busy() is false and
  // start() does nothing.
  void shutdown();

 signals:
  void plan_started(mb::PlanKind kind, int runs);
  void run_started(int index, const mb::RunConfig& config);
  void step_progress(const mb::StepProgress& progress);
  void epoch_finished(const mb::EpochMetrics& metrics);
  void run_finished(int index, const mb::RunRecord& record);
  void run_rejected(int index, const QString& message);
  // ok: every run completed; stopped: the user stopped the plan.
  void plan_finished(mb::PlanKind kind, bool ok, bool stopped);
  void status(const QString& message);

 private:
  void connect_worker(RunWorker* worker);
  void start_current();
  void on_run_finished(const RunRecord& record);
  void on_run_rejected(const QString& message);
  void next_or_finish();

  Launcher launcher_;
  std::optional<RunStore> trace_store_;
  InProcessWorker* in_process_;
  QPointer<RunWorker> active_;     // the worker of the run in progress
  PlanKind kind_ = PlanKind::Single;
  std::vector<PlannedRun> plan_;
  int current_ = -1;
  bool stopped_ = false;
  bool all_ok_ = true;
  bool closed_ = false;
};

}  // namespace mb

// Owns the training thread and runs a plan (experiment/plans.h: one run, or a baseline
// followed by a multi-device run) back to back. Lives in the GUI thread; forwards the
// worker's signals.
#pragma once
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThread>

#include <vector>

#include "experiment/plans.h"
#include "run/metatypes.h"

namespace mb {

class TrainingWorker;

class RunController : public QObject {
  Q_OBJECT
 public:
  explicit RunController(QObject* parent = nullptr);
  ~RunController() override;   // stops a run in progress and joins the thread

  bool busy() const { return current_ >= 0; }
  int plan_size() const { return int(plan_.size()); }
  const PlannedRun* current_run() const;

  void start(PlanKind kind, std::vector<PlannedRun> plan);
  // Stops the run in progress at its next step and cancels the rest of the plan.
  void stop();
  // Stops, waits for the thread and, before returning, delivers the run_finished of a run
  // in progress (so a window that closes mid-run still saves the partial record) and then
  // plan_finished. A run that was queued but never started (the thread quit first) has no
  // record: the plan just ends, stopped. Afterwards busy() is false.
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

  void start_worker(const mb::TrainConfig& config);   // internal: queued to the worker

 private:
  void on_run_finished(const mb::RunRecord& record);
  void on_run_rejected(const QString& message);
  void next_or_finish();

  QThread thread_;
  QPointer<TrainingWorker> worker_;
  PlanKind kind_ = PlanKind::Single;
  std::vector<PlannedRun> plan_;
  int current_ = -1;
  bool stopped_ = false;
  bool all_ok_ = true;
};

}  // namespace mb

// What the run controller needs from whatever trains one planned run: start it, stop it, shut
// it down before the window goes, and the value signals the window follows. Two kinds: the
// trainer on a thread of this process (run/in_process_worker.h) and mirrorbench-cli processes
// under mpirun (run/process_worker.h); the window cannot tell them apart.
#pragma once
#include <QObject>
#include <QString>

#include <optional>

#include "experiment/run_store.h"
#include "run/metatypes.h"

namespace mb {

class RunWorker : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  // Starts one run; it ends with exactly one run_finished or run_rejected, always delivered
  // later through the event loop (never from inside start()).
  virtual void start(const TrainConfig& config) = 0;
  // The run stops at its next step and still reports its record ("stopped"); a run that is
  // still loading stops as soon as it can.
  virtual void stop() = 0;
  // Stops and waits (bounded), then delivers the run_finished or run_rejected of a run in
  // progress before returning, because the event loop may never run again. Afterwards
  // start() does nothing.
  virtual void shutdown() = 0;

  // Where runs keep their Chrome trace: the store's trace_file_for(the record's id), written
  // before run_finished (nullopt: no trace). Set before start().
  void set_trace_store(std::optional<RunStore> store) { trace_store_ = std::move(store); }

 signals:
  void status(const QString& message);
  void run_started(const mb::RunConfig& config);
  void step_progress(const mb::StepProgress& progress);
  void epoch_finished(const mb::EpochMetrics& metrics);
  void run_finished(const mb::RunRecord& record);
  // The configuration or the data could not be used: no run happened.
  void run_rejected(const QString& message);

 protected:
  std::optional<RunStore> trace_store_;
};

}  // namespace mb

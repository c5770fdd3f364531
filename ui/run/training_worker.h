// The worker that runs the core trainer on its own QThread. It loads (and caches) the data,
// builds a MirroredTrainer and reports progress through queued, value-carrying signals.
#pragma once
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "run/metatypes.h"

namespace mb {

class TrainingWorker : public QObject {
  Q_OBJECT
 public:
  TrainingWorker() = default;

  // Thread-safe (called from the GUI thread while run() blocks the worker thread): the
  // running trainer stops at its next step boundary; a run not yet built is stopped at once.
  void request_stop();
  // Clears a stop request: called by the GUI thread right before it queues run(), so a Stop
  // pressed between queueing and starting still counts.
  void arm() { stop_requested_.store(false); }

 public slots:
  // Loads the data (cached per folder), trains, and emits run_finished or run_rejected. With
  // config.trace and a store root, the run's Chrome trace is written beside its record first.
  void run(const mb::TrainConfig& config, const QString& trace_root = {});

 signals:
  void status(const QString& message);
  void run_started(const mb::RunConfig& config);
  void step_progress(const mb::StepProgress& progress);
  void epoch_finished(const mb::EpochMetrics& metrics);
  void run_finished(const mb::RunRecord& record);
  // The configuration or the data could not be used (ConfigError, DataError): no run happened.
  void run_rejected(const QString& message);

 private:
  std::shared_ptr<const DataSplit> data_for(const std::string& dir);

  std::mutex mutex_;                       // guards active_ against request_stop()
  MirroredTrainer* active_ = nullptr;
  std::atomic<bool> stop_requested_{false};
  std::string cached_dir_;                 // touched by the worker thread only
  std::shared_ptr<const DataSplit> cached_data_;
};

}  // namespace mb

// The trainer's thread boundary: everything the core throws is caught here and turned into
// a signal, so neither a bad configuration nor a failing device can take the window down.
#include "run/training_worker.h"

#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "data/dataset.h"
#include "experiment/run_store.h"
#include "records/chrome_trace.h"
#include "util/error.h"

namespace mb {

void TrainingWorker::request_stop() {
  std::lock_guard lock(mutex_);
  stop_requested_.store(true);
  if (active_) active_->request_stop();
}

std::shared_ptr<const DataSplit> TrainingWorker::data_for(const std::string& dir) {
  const std::string folder = dir.empty() ? default_data_dir().string() : dir;
  if (cached_data_ && cached_dir_ == folder) return cached_data_;
  emit status(tr("Loading data set from %1 …").arg(QString::fromStdString(folder)));
  const auto t0 = std::chrono::steady_clock::now();
  cached_data_.reset();  // free the old set before loading the next one
  cached_data_ = std::make_shared<const DataSplit>(load_idx_dir(folder));
  cached_dir_ = folder;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("Loaded {} ({} train, {} validation images) in {:.2f} s", folder,
               cached_data_->train.count, cached_data_->val.count, s);
  return cached_data_;
}

void TrainingWorker::run(const TrainConfig& config, const QString& trace_root) {
  std::unique_ptr<MirroredTrainer> trainer;
  try {
    auto data = data_for(config.data_dir);
    trainer = std::make_unique<MirroredTrainer>(config, std::move(data));
  } catch (const Error& e) {
    spdlog::error("Run not started: {}", e.what());
    emit run_rejected(QString::fromStdString(e.what()));
    return;
  } catch (const std::exception& e) {  // e.g. bad_alloc while loading: still no crash
    spdlog::error("Run not started: {}", e.what());
    emit run_rejected(QString::fromStdString(e.what()));
    return;
  }

  {
    std::lock_guard lock(mutex_);
    active_ = trainer.get();
    if (stop_requested_.load()) trainer->request_stop();  // Stop pressed while loading
  }

  // The observer runs on trainer threads: it only copies values into queued signals. The
  // trainer already reports steps at most every 50 ms (and always an epoch's last step), and
  // the window repaints on its own timer, so every report is passed on.
  TrainObserver observer;
  observer.on_start = [this](const RunConfig& rc) { emit run_started(rc); };
  observer.on_step = [this](const StepProgress& p) { emit step_progress(p); };
  observer.on_epoch = [this](const EpochMetrics& m) { emit epoch_finished(m); };
  // A replica stuck in the device driver after a failure: run() cannot return (replica_threads.h).
  observer.on_stuck = [this](const RunRecord& r) { emit status(tr("Restart mirrorbench: %1").arg(QString::fromStdString(r.error))); };

  emit status(tr("Training on %1 …").arg(QString::fromStdString(config.devices)));
  RunRecord record;
  try {
    record = trainer->run(observer);
  } catch (const std::exception& e) {
    // The trainer promises not to throw for device failures; anything else still must not
    // escape the thread. Report it as a failed run with what we know.
    spdlog::error("Training failed: {}", e.what());
    record.config = trainer->run_config();
    record.status = RunStatus::Failed;
    record.error = e.what();
    if (record.id.empty()) record.id = make_run_id(record.config);
  }
  {
    std::lock_guard lock(mutex_);
    active_ = nullptr;
  }
  // Before the record is announced, so the history finds the trace when it lists the run. A
  // failed run has none (its steps could not be gathered).
  if (config.trace && !trace_root.isEmpty() && !trainer->trace().empty() && !record.id.empty()) {
    const RunStore store(trace_root.toStdString());
    try {
      std::filesystem::create_directories(store.runs_dir());
      write_chrome_trace(store.trace_file_for(record.id), record, trainer->trace());
    } catch (const std::exception& e) {
      spdlog::warn("The run's trace was not written: {}", e.what());
    }
  }
  emit run_finished(record);
}

}  // namespace mb

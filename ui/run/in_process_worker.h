// The in-process RunWorker: one QThread with one TrainingWorker for the window's lifetime,
// so the cached data set survives between runs.
#pragma once
#include <QPointer>
#include <QThread>

#include "run/run_worker.h"

namespace mb {

class TrainingWorker;

class InProcessWorker : public RunWorker {
  Q_OBJECT
 public:
  explicit InProcessWorker(QObject* parent = nullptr);
  ~InProcessWorker() override;   // shutdown()

  void start(const TrainConfig& config) override;
  void stop() override;
  // Joins the thread and delivers the worker's last queued signals. A run that was queued but
  // not started when the thread quit reports nothing: the caller ends its plan as stopped.
  void shutdown() override;

 signals:
  void start_worker(const mb::TrainConfig& config, const QString& trace_root);   // internal: queued to the thread

 private:
  QThread thread_;
  QPointer<TrainingWorker> worker_;
};

}  // namespace mb

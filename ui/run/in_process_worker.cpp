// The trainer on a thread of the workbench (see in_process_worker.h).
#include "run/in_process_worker.h"

#include <QCoreApplication>
#include <QEvent>

#include "run/training_worker.h"

namespace mb {

InProcessWorker::InProcessWorker(QObject* parent) : RunWorker(parent) {
  register_metatypes();
  thread_.setObjectName("mirrorbench-trainer");
  auto* worker = new TrainingWorker;
  worker->moveToThread(&thread_);
  worker_ = worker;
  connect(&thread_, &QThread::finished, worker, &QObject::deleteLater);
  connect(this, &InProcessWorker::start_worker, worker, &TrainingWorker::run);
  // Queued (the worker lives on the thread): values only.
  connect(worker, &TrainingWorker::status, this, &RunWorker::status);
  connect(worker, &TrainingWorker::run_started, this, &RunWorker::run_started);
  connect(worker, &TrainingWorker::step_progress, this, &RunWorker::step_progress);
  connect(worker, &TrainingWorker::epoch_finished, this, &RunWorker::epoch_finished);
  connect(worker, &TrainingWorker::run_finished, this, &RunWorker::run_finished);
  connect(worker, &TrainingWorker::run_rejected, this, &RunWorker::run_rejected);
  thread_.start();
}

InProcessWorker::~InProcessWorker() { shutdown(); }

void InProcessWorker::start(const TrainConfig& config) {
  if (!thread_.isRunning() || !worker_) return;
  worker_->arm();   // a Stop pressed between here and the worker starting still counts
  TrainConfig c = config;
  c.trace = c.trace || trace_store_.has_value();
  emit start_worker(c, trace_store_ ? QString::fromStdString(trace_store_->root().string()) : QString());
}

void InProcessWorker::stop() {
  if (worker_) worker_->request_stop();
}

void InProcessWorker::shutdown() {
  if (!thread_.isRunning()) return;
  stop();
  thread_.quit();   // takes effect once the worker returns to the thread's event loop
  thread_.wait();
  // The worker's last signals are queued to this (GUI) thread; deliver them now.
  QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
}

}  // namespace mb

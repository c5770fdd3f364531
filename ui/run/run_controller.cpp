// The plan runner: one QThread with one TrainingWorker for the window's lifetime, so the
// cached data set survives between runs.
#include "run/run_controller.h"

#include <QCoreApplication>
#include <QEvent>

#include "run/training_worker.h"

namespace mb {

RunController::RunController(QObject* parent) : QObject(parent) {
  register_metatypes();
  thread_.setObjectName("mirrorbench-trainer");
  auto* worker = new TrainingWorker;
  worker->moveToThread(&thread_);
  worker_ = worker;
  connect(&thread_, &QThread::finished, worker, &QObject::deleteLater);
  connect(this, &RunController::start_worker, worker, &TrainingWorker::run);
  connect(worker, &TrainingWorker::status, this, &RunController::status);
  connect(worker, &TrainingWorker::run_started, this,
          [this](const RunConfig& c) { emit run_started(current_, c); });
  connect(worker, &TrainingWorker::step_progress, this, &RunController::step_progress);
  connect(worker, &TrainingWorker::epoch_finished, this, &RunController::epoch_finished);
  connect(worker, &TrainingWorker::run_finished, this, &RunController::on_run_finished);
  connect(worker, &TrainingWorker::run_rejected, this, &RunController::on_run_rejected);
  thread_.start();
}

RunController::~RunController() { shutdown(); }

const PlannedRun* RunController::current_run() const {
  return current_ >= 0 && current_ < int(plan_.size()) ? &plan_[std::size_t(current_)] : nullptr;
}

void RunController::start(PlanKind kind, std::vector<PlannedRun> plan) {
  if (busy() || plan.empty() || !thread_.isRunning()) return;
  kind_ = kind;
  plan_ = std::move(plan);
  stopped_ = false;
  all_ok_ = true;
  current_ = 0;
  emit plan_started(kind_, plan_size());
  worker_->arm();
  emit start_worker(plan_[0].config);
}

void RunController::stop() {
  if (!busy()) return;
  stopped_ = true;
  if (worker_) worker_->request_stop();
}

void RunController::shutdown() {
  if (!thread_.isRunning()) return;
  stop();
  thread_.quit();   // takes effect once the worker returns to the thread's event loop
  thread_.wait();
  // The worker's last signals are queued to this (GUI) thread; deliver them now, because
  // the event loop may never run again.
  QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
  // Still busy: the next run of the plan was queued to the worker but the thread quit before
  // it started, so no run_finished will ever come. End the plan as stopped.
  if (busy()) {
    const PlanKind kind = kind_;
    current_ = -1;
    emit plan_finished(kind, false, true);
  }
}

void RunController::on_run_finished(const RunRecord& record) {
  if (record.status != RunStatus::Completed) all_ok_ = false;
  if (record.status == RunStatus::Stopped) stopped_ = true;
  emit run_finished(current_, record);
  next_or_finish();
}

void RunController::on_run_rejected(const QString& message) {
  all_ok_ = false;
  emit run_rejected(current_, message);
  // A rejected baseline makes the comparison meaningless: drop the rest of the plan. The user
  // did not stop it, so the plan ends "with errors", not "stopped".
  plan_.resize(std::size_t(current_) + 1);
  next_or_finish();
}

void RunController::next_or_finish() {
  if (!stopped_ && current_ + 1 < plan_size() && thread_.isRunning()) {
    ++current_;
    worker_->arm();
    emit start_worker(plan_[std::size_t(current_)].config);
    return;
  }
  const PlanKind kind = kind_;
  const bool ok = all_ok_ && current_ + 1 == plan_size();
  const bool stopped = stopped_;
  current_ = -1;
  emit plan_finished(kind, ok, stopped);
}

}  // namespace mb

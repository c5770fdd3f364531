// The plan on its thread (see run_controller.h).
#include "run/run_controller.h"

#include <QCoreApplication>
#include <QThread>

#include "common/format.h"

namespace mb {

RunController::RunController(QObject* parent) : QObject(parent), mpirun_(find_launcher()) {
  register_metatypes();
  // Connected first, so the window's own handler of plan_finished sees busy() false.
  connect(this, &RunController::plan_finished, this, &RunController::join, Qt::QueuedConnection);
}

RunController::~RunController() { shutdown(); }

const PlannedRun* RunController::current_run() const {
  const int i = current_.load();
  return busy() && i >= 0 && i < plan_size() ? &plan_.runs[std::size_t(i)] : nullptr;
}

void RunController::start(Plan plan) {
  if (busy() || plan.runs.empty() || closed_) return;
  plan_ = std::move(plan);
  current_.store(0);
  executor_ = std::make_unique<PlanExecutor>(store_, in_process_, &mpirun_);
  executor_->set_namer([](const RunRecord& r) {
    std::string name = default_run_name(r.config).toStdString();
    if (r.config.step_delay_s > 0) name += tr(" · teaching pace").toStdString();
    return name;
  });
  emit plan_started(plan_.kind, plan_size());
  // Emitted on the plan's thread: the window (on the GUI thread) gets them queued.
  PlanObserver o;
  o.on_run_starting = [this](int i, const PlannedRun&) { current_.store(i); };
  o.on_run_started = [this](int i, const RunConfig& c) { emit run_started(i, c); };
  o.on_step = [this](const StepProgress& p) { emit step_progress(p); };
  o.on_epoch = [this](const EpochMetrics& m) { emit epoch_finished(m); };
  o.on_status = [this](const std::string& s) { emit status(QString::fromStdString(s)); };
  o.on_run_finished = [this](int i, const RunRecord& r, const std::string& e) {
    emit run_finished(i, r, QString::fromStdString(e));
  };
  o.on_run_rejected = [this](int i, const std::string& why) { emit run_rejected(i, QString::fromStdString(why)); };
  o.on_stuck = [this](const RunRecord& r) { emit device_stuck(QString::fromStdString(r.error)); };
  thread_ = QThread::create([this, o] {
    const PlanOutcome outcome = executor_->run(plan_, o);
    emit plan_finished(outcome.kind, outcome.ok, outcome.stopped);
  });
  thread_->setObjectName("mirrorbench-plan");
  thread_->start();
}

void RunController::stop() {
  if (busy() && executor_) executor_->request_stop();
}

void RunController::join() {
  if (!thread_) return;
  thread_->wait();
  delete thread_;
  thread_ = nullptr;
  current_.store(-1);
}

void RunController::shutdown() {
  if (closed_) return;
  closed_ = true;
  if (!thread_) return;
  stop();
  thread_->wait();   // bounded: a child that ignores the stop is ended (mpirun_trainer.h)
  // The plan's last signals are queued to this (GUI) thread; deliver them now, as the event
  // loop may never run again.
  QCoreApplication::sendPostedEvents(nullptr, QEvent::MetaCall);
  join();
}

}  // namespace mb

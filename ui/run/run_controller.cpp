// The plan runner: picks the worker per planned run and follows it (see run_controller.h).
#include "run/run_controller.h"

#include "run/in_process_worker.h"
#include "run/process_worker.h"

namespace mb {

RunController::RunController(QObject* parent) : QObject(parent), launcher_(find_launcher()) {
  register_metatypes();
  in_process_ = new InProcessWorker(this);
  connect_worker(in_process_);
}

RunController::~RunController() { shutdown(); }

void RunController::connect_worker(RunWorker* w) {
  // Only the worker of the run in progress speaks for the plan.
  auto mine = [this, w] { return w == active_.data(); };
  connect(w, &RunWorker::status, this, [this, mine](const QString& s) {
    if (mine()) emit status(s);
  });
  connect(w, &RunWorker::run_started, this, [this, mine](const RunConfig& c) {
    if (mine()) emit run_started(current_, c);
  });
  connect(w, &RunWorker::step_progress, this, [this, mine](const StepProgress& p) {
    if (mine()) emit step_progress(p);
  });
  connect(w, &RunWorker::epoch_finished, this, [this, mine](const EpochMetrics& m) {
    if (mine()) emit epoch_finished(m);
  });
  connect(w, &RunWorker::run_finished, this, [this, mine](const RunRecord& r) {
    if (mine()) on_run_finished(r);
  });
  connect(w, &RunWorker::run_rejected, this, [this, mine](const QString& m) {
    if (mine()) on_run_rejected(m);
  });
}

void RunController::set_trace_store(std::optional<RunStore> store) {
  trace_store_ = std::move(store);
  in_process_->set_trace_store(trace_store_);
}

const PlannedRun* RunController::current_run() const {
  return current_ >= 0 && current_ < int(plan_.size()) ? &plan_[std::size_t(current_)] : nullptr;
}

void RunController::start(PlanKind kind, std::vector<PlannedRun> plan) {
  if (busy() || plan.empty() || closed_) return;
  kind_ = kind;
  plan_ = std::move(plan);
  stopped_ = false;
  all_ok_ = true;
  current_ = 0;
  emit plan_started(kind_, plan_size());
  start_current();
}

void RunController::start_current() {
  const PlannedRun& run = plan_[std::size_t(current_)];
  if (run.processes > 1) {
    auto* child = new ProcessWorker(launcher_, run.processes, run.hostfile, this);
    child->set_trace_store(trace_store_);
    connect_worker(child);
    active_ = child;
  } else {
    active_ = in_process_;
  }
  active_->start(run.config);
}

void RunController::stop() {
  if (!busy()) return;
  stopped_ = true;
  if (active_) active_->stop();
}

void RunController::shutdown() {
  if (closed_) return;
  closed_ = true;
  stop();
  // The run in progress delivers its record before this returns (which ends the plan: no next
  // run starts once closed), then the in-process thread is joined.
  if (active_ && active_ != in_process_) active_->shutdown();
  in_process_->shutdown();
  // Still busy: the next run was queued to the thread but it quit before starting it, so no
  // run_finished will ever come. End the plan as stopped.
  if (busy()) {
    const PlanKind kind = kind_;
    current_ = -1;
    active_ = nullptr;
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
  // A child's worker is done with its run; it goes once its signal has returned.
  if (active_ && active_ != in_process_) active_->deleteLater();
  active_ = nullptr;
  if (!stopped_ && !closed_ && current_ + 1 < plan_size()) {
    ++current_;
    start_current();
    return;
  }
  const PlanKind kind = kind_;
  const bool ok = all_ok_ && current_ + 1 == plan_size();
  const bool stopped = stopped_;
  current_ = -1;
  emit plan_finished(kind, ok, stopped);
}

}  // namespace mb

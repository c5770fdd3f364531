// mpirun as a child process, followed through the JSON-lines progress stream (see
// process_worker.h).
#include "run/process_worker.h"

#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <QUuid>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "trainer/progress_events.h"
#include "util/error.h"

namespace mb {

namespace {

constexpr int kTailLines = 40;
const QString kCliPrefix = QStringLiteral("mirrorbench-cli: ");

// Lines of mpirun's help blocks that carry no words ("-----", blank).
bool is_decoration(const QString& line) {
  const QString t = line.trimmed();
  return t.isEmpty() || t.count('-') == t.size() || t.count('*') == t.size() || t.count('=') == t.size();
}

}  // namespace

ProcessWorker::ProcessWorker(Launcher launcher, int processes, std::string hostfile, QObject* parent)
    : RunWorker(parent), launcher_(std::move(launcher)), processes_(processes), hostfile_(std::move(hostfile)) {
  register_metatypes();
  grace_.setSingleShot(true);
  connect(&grace_, &QTimer::timeout, this, &ProcessWorker::escalate);
}

ProcessWorker::~ProcessWorker() { shutdown(); }

qint64 ProcessWorker::child_pid() const {
  return process_ && process_->state() != QProcess::NotRunning ? process_->processId() : 0;
}

void ProcessWorker::start(const TrainConfig& config) {
  if (closed_ || process_ || outcome_) return;
  if (!launcher_.available()) {
    settle({std::nullopt, launcher_.problem()});
    QTimer::singleShot(0, this, &ProcessWorker::deliver);   // never from inside start()
    return;
  }
  if (trace_store_ && hostfile_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(trace_store_->runs_dir(), ec);
    // A name the store never reads as a record (*.trace.json), unique to this run.
    const std::string name = "child-" + QUuid::createUuid().toString(QUuid::WithoutBraces).toStdString() + ".trace.json";
    if (!ec) pending_trace_ = QString::fromStdString((trace_store_->runs_dir() / name).string());
  }
  const ChildCommand cmd = mpirun_command(launcher_, config, processes_, hostfile_, pending_trace_);
  spdlog::info("Starting {} processes: {}", processes_, cmd.display().toStdString());
  emit status(hostfile_.empty() ? tr("Starting %1 processes on this machine (mpirun) …").arg(processes_)
                                : tr("Starting %1 processes on the hosts of %2 (mpirun) …")
                                      .arg(processes_)
                                      .arg(QString::fromStdString(hostfile_)));
  process_ = new QProcess(this);
  process_->setChildProcessModifier([] {
    // Its own process group, so a last-resort SIGKILL reaches the local ranks too; and SIGTERM
    // when the workbench dies without shutting down (a crash, Ctrl-C in its terminal), which
    // mpirun turns into the end of the whole job instead of orphaned ranks training on.
    ::setpgid(0, 0);
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
  });
  connect(process_, &QProcess::readyReadStandardOutput, this, &ProcessWorker::read_stdout);
  connect(process_, &QProcess::readyReadStandardError, this, &ProcessWorker::read_stderr);
  connect(process_, &QProcess::finished, this, &ProcessWorker::on_finished);
  connect(process_, &QProcess::errorOccurred, this, &ProcessWorker::on_error);
  process_->start(cmd.program, cmd.args);
  process_->closeWriteChannel();   // mpirun forwards stdin to rank 0: give it an end at once
}

void ProcessWorker::stop() {
  if (!process_ || delivered_ || process_->state() == QProcess::NotRunning) return;
  stop_requested_ = true;
  // Before the start event the child's processes may not have their stop handler yet, and an
  // unhandled SIGUSR1 would kill them: the signal waits for the start event (send_stop there).
  if (started_) send_stop();
  if (kill_stage_ == 0 && !grace_.isActive()) grace_.start(stop_grace_ms_);
}

void ProcessWorker::send_stop() {
  if (stop_sent_ || !process_ || process_->state() != QProcess::Running) return;
  stop_sent_ = true;
  // mpirun only: it forwards SIGUSR1 once to every process (a second one would make the
  // processes exit at once, without their record).
  ::kill(static_cast<pid_t>(process_->processId()), SIGUSR1);
}

void ProcessWorker::escalate() {
  if (!process_ || process_->state() == QProcess::NotRunning) return;
  const auto pid = static_cast<pid_t>(process_->processId());
  if (kill_stage_ == 0) {
    spdlog::warn("The {} processes did not stop within {} s: ending them", processes_, stop_grace_ms_ / 1000.0);
    kill_stage_ = 1;
    ::kill(pid, SIGTERM);   // mpirun ends every process of the job
    grace_.start(kill_grace_ms_);
  } else if (kill_stage_ == 1) {
    spdlog::warn("mpirun did not end within {} s of SIGTERM: killing its process group", kill_grace_ms_ / 1000.0);
    kill_stage_ = 2;
    ::kill(-pid, SIGKILL);
    process_->kill();
  }
}

void ProcessWorker::shutdown() {
  closed_ = true;
  if (process_ && process_->state() != QProcess::NotRunning && !delivered_) {
    stop();
    grace_.stop();   // no event loop from here on: the waits below keep the time
    // waitForFinished reads the pipes and emits readyRead and finished meanwhile, so the
    // start event (which sends the deferred stop) and the end event are still handled.
    const int waits[] = {stop_grace_ms_, kill_grace_ms_, 2000};
    for (int wait : waits) {
      if (process_->state() == QProcess::NotRunning || process_->waitForFinished(wait)) break;
      escalate();
    }
    if (process_->state() != QProcess::NotRunning)   // not even SIGKILL: say so rather than hang
      settle({std::nullopt, tr("mpirun (pid %1) did not end after SIGKILL").arg(process_->processId())});
  }
  deliver();
}

void ProcessWorker::read_stdout() {
  out_buffer_ += process_->readAllStandardOutput();
  for (qsizetype nl; (nl = out_buffer_.indexOf('\n')) >= 0;) {
    const QByteArray line = out_buffer_.left(nl);
    out_buffer_.remove(0, nl + 1);
    handle_event_line(std::string_view(line.constData(), std::size_t(line.size())));
  }
}

void ProcessWorker::read_stderr() {
  err_buffer_ += process_->readAllStandardError();
  for (qsizetype nl; (nl = err_buffer_.indexOf('\n')) >= 0;) {
    const QString line = QString::fromUtf8(err_buffer_.left(nl)).trimmed();
    err_buffer_.remove(0, nl + 1);
    handle_stderr_line(line);
  }
}

void ProcessWorker::handle_event_line(std::string_view line) {
  std::optional<ProgressEvent> e;
  try {
    e = parse_progress_line(line);
  } catch (const DataError& ex) {
    spdlog::warn("{}", ex.what());   // a garbled line costs that line, not the run
    return;
  }
  if (!e) {   // the launcher's own words share the stream
    const QString text = QString::fromUtf8(line.data(), qsizetype(line.size())).trimmed();
    if (!text.isEmpty()) spdlog::info("mpirun: {}", text.toStdString());
    return;
  }
  switch (e->kind) {
    case ProgressEvent::Kind::Start:
      started_ = e->config;
      emit status(tr("Training on %1 processes × %2 …").arg(e->config.processes).arg(QString::fromStdString(e->config.devices)));
      emit run_started(e->config);
      if (stop_requested_) send_stop();
      break;
    case ProgressEvent::Kind::Step: emit step_progress(e->step); break;
    case ProgressEvent::Kind::Epoch:
      epochs_.push_back(e->epoch);
      emit epoch_finished(e->epoch);
      break;
    case ProgressEvent::Kind::Log:
      // The in-process trainer's lines reach the log through spdlog; the child's the same way.
      switch (e->level) {
        case LogLevel::Info: spdlog::info("{}", e->line); break;
        case LogLevel::Warning: spdlog::warn("{}", e->line); break;
        case LogLevel::Error: spdlog::error("{}", e->line); break;
      }
      break;
    case ProgressEvent::Kind::End: end_ = e->record; break;
  }
}

void ProcessWorker::handle_stderr_line(const QString& line) {
  if (line.isEmpty()) return;
  if (line.startsWith(kCliPrefix)) {
    cli_errors_ << line.mid(kCliPrefix.size());
    spdlog::error("{}", line.toStdString());
  } else {
    spdlog::info("{}", line.toStdString());   // epoch lines, mpirun's messages
  }
  if (!is_decoration(line)) {
    err_tail_ << line;
    if (err_tail_.size() > kTailLines) err_tail_.removeFirst();
  }
}

QString ProcessWorker::failure_message(int exit_code, QProcess::ExitStatus status) const {
  if (kill_stage_ > 0)
    return tr("the %1 processes did not stop within %2 s of the stop request and were ended")
        .arg(processes_)
        .arg(stop_grace_ms_ / 1000.0);
  // The CLI's own line: process 0's (no "process N of M" prefix) when there is one, as it
  // names the cause rather than the echo of another process's failure.
  for (const QString& e : cli_errors_)
    if (!e.startsWith(QStringLiteral("process "))) return e;
  if (!cli_errors_.isEmpty()) return cli_errors_.front();
  const QString how = status == QProcess::CrashExit ? tr("mpirun was ended by a signal")
                                                    : tr("mpirun exited with code %1").arg(exit_code);
  QStringList said;
  for (const QString& l : err_tail_) {
    if (said.size() == 3) break;
    said << l;
  }
  return said.isEmpty() ? how + tr(" and no end event") : how + ": " + said.join(' ');
}

void ProcessWorker::on_finished(int exit_code, QProcess::ExitStatus status) {
  grace_.stop();
  read_stdout();
  read_stderr();
  if (!out_buffer_.isEmpty()) handle_event_line(std::string_view(out_buffer_.constData(), std::size_t(out_buffer_.size())));
  if (!err_buffer_.isEmpty()) handle_stderr_line(QString::fromUtf8(err_buffer_).trimmed());
  out_buffer_.clear();
  err_buffer_.clear();
  place_trace();
  if (end_) {
    settle({end_, {}});
  } else if (!started_) {
    settle({std::nullopt, failure_message(exit_code, status)});
  } else {
    // Started but no record: what the window saw is kept, as a failed run.
    RunRecord r;
    r.config = *started_;
    r.epochs = epochs_;
    r.status = RunStatus::Failed;
    r.error = failure_message(exit_code, status).toStdString();
    r.id = make_run_id(r.config);
    settle({r, {}});
  }
  deliver();
}

void ProcessWorker::on_error(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart) return;   // the others end in finished()
  settle({std::nullopt, tr("%1 could not be started (%2): install openmpi-bin to run across processes")
                            .arg(launcher_.mpirun, process_->errorString())});
  QTimer::singleShot(0, this, &ProcessWorker::deliver);
}

void ProcessWorker::place_trace() {
  if (pending_trace_.isEmpty()) return;
  const std::filesystem::path pending = pending_trace_.toStdString();
  pending_trace_.clear();
  std::error_code ec;
  if (!std::filesystem::exists(pending, ec)) return;   // a failed run writes none
  if (end_ && !end_->id.empty() && trace_store_) {
    std::filesystem::rename(pending, trace_store_->trace_file_for(end_->id), ec);
    if (!ec) return;
    spdlog::warn("The run's trace stays at {}: {}", pending.string(), ec.message());
    return;
  }
  std::filesystem::remove(pending, ec);   // no record to keep it beside
}

void ProcessWorker::settle(Outcome outcome) {
  if (!outcome_) outcome_ = std::move(outcome);
}

void ProcessWorker::deliver() {
  if (delivered_ || !outcome_) return;
  delivered_ = true;
  if (outcome_->record) {
    if (outcome_->record->status == RunStatus::Failed)
      spdlog::error("Run across {} processes failed: {}", processes_, outcome_->record->error);
    emit run_finished(*outcome_->record);
  } else {
    spdlog::error("Run across {} processes not started: {}", processes_, outcome_->rejected.toStdString());
    emit run_rejected(outcome_->rejected);
  }
}

}  // namespace mb

// mpirun as a child process, followed through the JSON-lines progress stream (see
// mpirun_trainer.h).
#include "run/mpirun_trainer.h"

#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <QElapsedTimer>
#include <QProcess>

#include <spdlog/spdlog.h>

#include "trainer/progress_events.h"
#include "util/error.h"

namespace mb {
namespace {

constexpr int kTailLines = 40;
constexpr int kPollMs = 100;   // the longest a step report waits in the pipe
const QString kCliPrefix = QStringLiteral("mirrorbench-cli: ");

// Lines of mpirun's help blocks that carry no words ("-----", blank).
bool is_decoration(const QString& line) {
  const QString t = line.trimmed();
  return t.isEmpty() || t.count('-') == t.size() || t.count('*') == t.size() || t.count('=') == t.size();
}

void log_event_line(LogLevel level, const std::string& line) {
  // The in-process trainer's lines reach the log through spdlog; the child's the same way.
  switch (level) {
    case LogLevel::Info: spdlog::info("{}", line); break;
    case LogLevel::Warning: spdlog::warn("{}", line); break;
    case LogLevel::Error: spdlog::error("{}", line); break;
  }
}

}  // namespace

RunRecord MpirunTrainer::train(const PlannedRun& run, const RunCallbacks& callbacks,
                               const std::filesystem::path& trace_file) {
  MB_CHECK(launcher_.available(), ConfigError, "{}", launcher_.problem().toStdString());
  const ChildCommand cmd = mpirun_command(launcher_, run.config, run.processes, run.hostfile,
                                          QString::fromStdString(trace_file.string()));
  spdlog::info("Starting {} processes: {}", run.processes, cmd.display().toStdString());
  if (callbacks.status)
    callbacks.status(run.hostfile.empty()
                         ? fmt::format("Starting {} processes on this machine (mpirun) ...", run.processes)
                         : fmt::format("Starting {} processes on the hosts of {} (mpirun) ...", run.processes, run.hostfile));
  QProcess process;
  process.setChildProcessModifier([] {
    // Its own process group, so a last-resort SIGKILL reaches the local ranks too; and SIGTERM
    // when the workbench dies without shutting down (a crash, Ctrl-C in its terminal), which
    // mpirun turns into the end of the whole job instead of orphaned ranks training on.
    ::setpgid(0, 0);
#ifdef __linux__
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
  });
  process.start(cmd.program, cmd.args);
  if (!process.waitForStarted(30000))
    throw ConfigError(fmt::format("{} could not be started ({}): install openmpi-bin to run across processes",
                                  launcher_.mpirun.toStdString(), process.errorString().toStdString()));
  process.closeWriteChannel();   // mpirun forwards stdin to rank 0: give it an end at once
  pid_.store(process.processId());
  Child child;
  child.callbacks = &callbacks;
  follow(process, child);
  pid_.store(0);
  const bool crashed = process.exitStatus() == QProcess::CrashExit;
  if (child.end) return *child.end;
  const QString why = failure_message(child, run.processes, process.exitCode(), crashed);
  if (!child.started) throw Error(why.toStdString());   // rejected: no run happened
  // Started but no record: what the window saw is kept, as a failed run.
  RunRecord r;
  r.config = *child.started;
  r.epochs = child.epochs;
  r.status = RunStatus::Failed;
  r.error = why.toStdString();
  r.id = make_run_id(r.config);
  spdlog::error("Run across {} processes failed: {}", run.processes, r.error);
  return r;
}

void MpirunTrainer::follow(QProcess& process, Child& child) {
  const auto pid = static_cast<pid_t>(process.processId());
  bool stop_sent = false;
  QElapsedTimer since_stop;
  int grace_ms = 0;
  while (process.state() != QProcess::NotRunning) {
    process.waitForReadyRead(kPollMs);   // also drains stderr meanwhile
    read(process, child, false);
    if (process.state() == QProcess::NotRunning) break;
    // Before the start event the child's processes may not have their stop handler yet, and an
    // unhandled SIGUSR1 would kill them: the signal waits for the start event. mpirun forwards
    // SIGUSR1 once to every process (a second one would make them exit without their record).
    if (stop_.load() && !stop_sent && child.started) {
      stop_sent = true;
      ::kill(pid, SIGUSR1);
    }
    if (stop_.load() && !since_stop.isValid()) since_stop.start(), grace_ms = stop_grace_ms_;
    if (!since_stop.isValid() || since_stop.elapsed() < grace_ms) continue;
    if (child.kill_stage == 0) {
      spdlog::warn("The processes did not stop within {} s: ending them", stop_grace_ms_ / 1000.0);
      child.kill_stage = 1;
      ::kill(pid, SIGTERM);   // mpirun ends every process of the job
      since_stop.start(), grace_ms = kill_grace_ms_;
    } else if (child.kill_stage == 1) {
      spdlog::warn("mpirun did not end within {} s of SIGTERM: killing its process group", kill_grace_ms_ / 1000.0);
      child.kill_stage = 2;
      ::kill(-pid, SIGKILL);
      process.kill();
      since_stop.start(), grace_ms = 2000;
    } else {
      break;   // not even SIGKILL: say so rather than hang
    }
  }
  process.waitForFinished(1000);
  read(process, child, true);
}

void MpirunTrainer::read(QProcess& process, Child& child, bool final) {
  child.out += process.readAllStandardOutput();
  child.err += process.readAllStandardError();
  for (qsizetype nl; (nl = child.out.indexOf('\n')) >= 0;) {
    const QByteArray line = child.out.left(nl);
    child.out.remove(0, nl + 1);
    handle_event_line(child, std::string_view(line.constData(), std::size_t(line.size())));
  }
  for (qsizetype nl; (nl = child.err.indexOf('\n')) >= 0;) {
    const QString line = QString::fromUtf8(child.err.left(nl)).trimmed();
    child.err.remove(0, nl + 1);
    handle_stderr_line(child, line);
  }
  if (!final) return;
  if (!child.out.isEmpty()) handle_event_line(child, std::string_view(child.out.constData(), std::size_t(child.out.size())));
  if (!child.err.isEmpty()) handle_stderr_line(child, QString::fromUtf8(child.err).trimmed());
  child.out.clear();
  child.err.clear();
}

void MpirunTrainer::handle_event_line(Child& child, std::string_view line) {
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
  const RunCallbacks& cb = *child.callbacks;
  switch (e->kind) {
    case ProgressEvent::Kind::Start:
      child.started = e->config;
      if (cb.status)
        cb.status(fmt::format("Training on {} processes x {} ...", e->config.processes, e->config.devices_text()));
      if (cb.train.on_start) cb.train.on_start(e->config);
      break;
    case ProgressEvent::Kind::Step:
      if (cb.train.on_step) cb.train.on_step(e->step);
      break;
    case ProgressEvent::Kind::Epoch:
      child.epochs.push_back(e->epoch);
      if (cb.train.on_epoch) cb.train.on_epoch(e->epoch);
      break;
    case ProgressEvent::Kind::Log: log_event_line(e->level, e->line); break;
    case ProgressEvent::Kind::End: child.end = e->record; break;
  }
}

void MpirunTrainer::handle_stderr_line(Child& child, const QString& line) {
  if (line.isEmpty()) return;
  if (line.startsWith(kCliPrefix)) {
    child.cli_errors << line.mid(kCliPrefix.size());
    spdlog::error("{}", line.toStdString());
  } else {
    spdlog::info("{}", line.toStdString());   // epoch lines, mpirun's messages
  }
  if (!is_decoration(line)) {
    child.err_tail << line;
    if (child.err_tail.size() > kTailLines) child.err_tail.removeFirst();
  }
}

QString MpirunTrainer::failure_message(const Child& child, int processes, int exit_code, bool crashed) const {
  if (child.kill_stage > 0)
    return QStringLiteral("the %1 processes did not stop within %2 s of the stop request and were ended")
        .arg(processes)
        .arg(stop_grace_ms_ / 1000.0);
  // The CLI's own line: process 0's (no "process N of M" prefix) when there is one, as it
  // names the cause rather than the echo of another process's failure.
  for (const QString& e : child.cli_errors)
    if (!e.startsWith(QStringLiteral("process "))) return e;
  if (!child.cli_errors.isEmpty()) return child.cli_errors.front();
  const QString how = crashed ? QStringLiteral("mpirun was ended by a signal")
                              : QStringLiteral("mpirun exited with code %1").arg(exit_code);
  QStringList said;
  for (const QString& l : child.err_tail) {
    if (said.size() == 3) break;
    said << l;
  }
  return said.isEmpty() ? how + QStringLiteral(" and no end event") : how + ": " + said.join(' ');
}

}  // namespace mb

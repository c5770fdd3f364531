// The multi-process RunWorker: `mpirun -np N ... mirrorbench-cli train ... --progress json` in a
// child process (run/child_command.h), its stdout read line by line with the core's
// parse_progress_line and turned into the very signals the in-process worker emits. Stop is
// SIGUSR1 to mpirun, which forwards it to every process (the record comes back "stopped" in
// the end event); a child that does not stop within the grace period is ended (SIGTERM to
// mpirun, which ends the job, then SIGKILL to its process group). A child that ends without an
// end event is reported from its stderr: run_rejected before training started, else a failed
// record with the epochs seen so far. One worker per planned run. With a trace store and no
// hostfile (process 0 then writes on this machine), the child writes its Chrome trace under a
// temporary name in the store, renamed to trace_file_for(the record's id) at the end.
#pragma once
#include <QProcess>
#include <QStringList>
#include <QTimer>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/child_command.h"
#include "run/run_worker.h"

namespace mb {

class ProcessWorker : public RunWorker {
  Q_OBJECT
 public:
  static constexpr int kStopGraceMs = 30000;   // a stopped run ends within one step; this is for hangs
  static constexpr int kKillGraceMs = 5000;    // after SIGTERM, before SIGKILL

  ProcessWorker(Launcher launcher, int processes, std::string hostfile, QObject* parent = nullptr);
  ~ProcessWorker() override;   // shutdown()

  void start(const TrainConfig& config) override;
  void stop() override;
  void shutdown() override;

  // Tests: a child that ignores Stop (and SIGTERM) is ended sooner.
  void set_grace_ms(int stop_ms, int kill_ms) { stop_grace_ms_ = stop_ms, kill_grace_ms_ = kill_ms; }
  qint64 child_pid() const;   // mpirun's pid while it runs, else 0

 private:
  // The run's one outcome, kept until delivered: a record, or a rejection message.
  struct Outcome {
    std::optional<RunRecord> record;
    QString rejected;
  };

  void read_stdout();
  void read_stderr();
  void handle_event_line(std::string_view line);
  void handle_stderr_line(const QString& line);
  void on_finished(int exit_code, QProcess::ExitStatus status);
  void on_error(QProcess::ProcessError error);
  void send_stop();
  void escalate();   // the grace period ran out: SIGTERM, then SIGKILL
  QString failure_message(int exit_code, QProcess::ExitStatus status) const;
  void settle(Outcome outcome);   // keeps the first outcome
  void deliver();                 // emits it once
  void place_trace();             // the child's trace under its record's id (or removed)

  Launcher launcher_;
  int processes_;
  std::string hostfile_;
  QProcess* process_ = nullptr;
  QString pending_trace_;          // where the child writes its trace (empty: none asked)
  QTimer grace_;
  int stop_grace_ms_ = kStopGraceMs;
  int kill_grace_ms_ = kKillGraceMs;
  int kill_stage_ = 0;             // 1: SIGTERM sent, 2: SIGKILL sent
  QByteArray out_buffer_, err_buffer_;
  QStringList cli_errors_;         // "mirrorbench-cli: ..." lines, prefix removed
  QStringList err_tail_;           // the last stderr lines, for a launcher's own failure
  std::optional<RunConfig> started_;
  std::vector<EpochMetrics> epochs_;
  std::optional<RunRecord> end_;
  std::optional<Outcome> outcome_;
  bool stop_requested_ = false;
  bool stop_sent_ = false;
  bool delivered_ = false;
  bool closed_ = false;
};

}  // namespace mb

// The RunTrainer for runs of several processes: `mpirun -np N ... mirrorbench-cli train ...
// --progress json` as a child process (run/child_command.h), its stdout read line by line with
// the core's parse_progress_line and turned into the very callbacks an in-process run makes.
// Runs on the plan executor's thread and blocks there (QProcess's waiting calls). Stop is
// SIGUSR1 to mpirun, which forwards it to every process (the record comes back "stopped" in
// the end event); a child that does not stop within the grace period is ended (SIGTERM to
// mpirun, which ends the job, then SIGKILL to its process group). A child that ends without an
// end event is reported from its stderr: an Error (rejected) before training started, else a
// failed record with the epochs seen so far.
#pragma once
#include <QString>
#include <QStringList>

#include <atomic>
#include <optional>
#include <string_view>
#include <vector>

#include "experiment/plan_executor.h"
#include "run/child_command.h"

class QProcess;

namespace mb {

class MpirunTrainer : public RunTrainer {
 public:
  static constexpr int kStopGraceMs = 30000;   // a stopped run ends within one step; this is for hangs
  static constexpr int kKillGraceMs = 5000;    // after SIGTERM, before SIGKILL

  explicit MpirunTrainer(Launcher launcher) : launcher_(std::move(launcher)) {}

  RunRecord train(const PlannedRun& run, const RunCallbacks& callbacks, const std::filesystem::path& trace_file) override;
  void request_stop() override { stop_.store(true); }
  void clear_stop() override { stop_.store(false); }

  const Launcher& launcher() const { return launcher_; }
  void set_launcher(Launcher launcher) { launcher_ = std::move(launcher); }   // between runs
  // Tests: a child that ignores Stop (and SIGTERM) is ended sooner.
  void set_grace_ms(int stop_ms, int kill_ms) { stop_grace_ms_ = stop_ms, kill_grace_ms_ = kill_ms; }
  qint64 child_pid() const { return pid_.load(); }   // mpirun's pid while it runs, else 0

 private:
  // What one child said, read as it comes.
  struct Child {
    const RunCallbacks* callbacks = nullptr;
    QByteArray out, err;                 // partial lines
    QStringList cli_errors;              // "mirrorbench-cli: ..." lines, prefix removed
    QStringList err_tail;                // the last stderr lines, for a launcher's own failure
    std::optional<RunConfig> started;
    std::vector<EpochMetrics> epochs;
    std::optional<RunRecord> end;
    int kill_stage = 0;                  // 1: SIGTERM sent, 2: SIGKILL sent
  };

  void follow(QProcess& process, Child& child);   // until it ends, stopping and ending it as asked
  void read(QProcess& process, Child& child, bool final);
  void handle_event_line(Child& child, std::string_view line);
  void handle_stderr_line(Child& child, const QString& line);
  QString failure_message(const Child& child, int processes, int exit_code, bool crashed) const;

  Launcher launcher_;
  std::atomic<bool> stop_{false};
  std::atomic<qint64> pid_{0};
  int stop_grace_ms_ = kStopGraceMs;
  int kill_grace_ms_ = kKillGraceMs;
};

}  // namespace mb

// Stop requests from signals: SIGINT (Ctrl-C), SIGTERM (kill, systemd, a scheduler ending a
// job), SIGHUP (the terminal closed) and SIGUSR1 (the program that started the run, through
// mpirun, which forwards it to every process) all stop a run at its next step, so its
// outputs are still written, like the first Ctrl-C always did. Kept apart from the train command so that
// other launchers (MPI ranks) can stop the same way.
#pragma once

namespace mb::cli {

// While it lives, the first of those signals calls on_stop(context) from the signal handler
// (so on_stop must be async-signal-safe: an atomic store, as MirroredTrainer::request_stop)
// and a second one ends the process at once with status 128 + signal. A signal that was
// already ignored when the guard was made stays ignored: nohup ignores SIGHUP, and a shell
// starts background jobs with SIGINT ignored, and both mean "do not stop me for that".
// The previous dispositions come back when the guard is destroyed. One guard at a time.
class StopOnSignals {
 public:
  using StopFn = void (*)(void* context);
  StopOnSignals(StopFn on_stop, void* context);
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  int received() const;   // the signal that asked to stop, 0 if none did

  static const char* name(int signal);   // "SIGTERM"
};

}  // namespace mb::cli

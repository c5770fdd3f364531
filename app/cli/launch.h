// Joining a run of several processes. When a launcher (mpirun, srun) started this process,
// MPI is started and the trainer gets the link to the other processes; alone, nothing
// changes. Also the end of such a run: a healthy run finalises MPI on every process; a
// failed one must end every process, but only after process 0 has written its record.
#pragma once
#include <memory>
#include <string>

#include "comm/launch.h"
#include "comm/mpi_session.h"

namespace mb::cli {

class Launch {
 public:
  // Reads the launcher's environment and starts MPI when a launcher started this process.
  // Throws ConfigError when one did and this build cannot join it (built without MPI, or the
  // launcher and MPI disagree on the world).
  static Launch join(double timeout_s);

  bool multi_process() const { return session_ != nullptr; }
  int processes() const { return session_ ? session_->info().processes : 1; }
  int process() const { return session_ ? session_->info().process : 0; }
  bool primary() const { return process() == 0; }
  std::shared_ptr<ProcessLink> link() const { return session_ ? session_->link() : nullptr; }
  std::string describe() const;   // "process 1 of 2 on host vm", for messages

  // This process failed on its own (bad data here, a device error): the others learn why.
  void fail(const std::string& why);

  // The end of this process's part of the run, with `exit_code` (0: all went well). Alone, or
  // in a healthy run, returns the code (MPI is finalised when the Launch dies). In a failed
  // multi-process run it does not return: process 0 ends the whole run at once (its outputs
  // are written by now); the others wait up to `grace_s` for that, then end it themselves
  // (process 0 may be the one that died).
  int finish(int exit_code, double grace_s = 10.0);

 private:
  std::unique_ptr<MpiSession> session_;
};

}  // namespace mb::cli

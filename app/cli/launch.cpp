// Multi-process start and end for mirrorbench-cli (see launch.h). The one place that knows
// whether this build has MPI.
#include "launch.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "util/error.h"

namespace mb::cli {

Launch Launch::join(double timeout_s) {
  Launch out;
  const LaunchInfo launch = detect_launch();
  if (!launch.launched()) return out;
#ifdef MB_HAVE_MPI
  out.session_ = start_mpi_session(launch, timeout_s);
#else
  (void)timeout_s;
  throw ConfigError(fmt::format("started by {} as one of {} processes ({}), but this mirrorbench-cli was built "
                                "without MPI: rebuild with libopenmpi-dev installed (-DMB_WITH_MPI=ON), or run it "
                                "without the launcher",
                                launch.launcher, launch.processes, launch.variable));
#endif
  return out;
}

std::string Launch::describe() const {
  if (!session_) return "this process";
  const ProcessInfo& i = session_->info();
  return fmt::format("process {} of {} on host {}", i.process, i.processes, i.host);
}

void Launch::fail(const std::string& why) {
  if (session_) session_->link()->request_abort(fmt::format("{}: {}", describe(), why));
}

int Launch::finish(int exit_code, double grace_s) {
  if (!session_ || exit_code == 0) return exit_code;
  fail("failed");   // no-op when the failure was already announced (or came from a peer)
  if (!primary()) {
    // Process 0 writes its record and then ends the run (MPI_Abort kills this process); wait
    // for that, unless process 0 is the one that is gone.
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_s));
  }
  session_->abort_run(exit_code);
  return exit_code;   // not reached (abort_run ends the process), for compilers that do not see it
}

std::string mpi_summary() {
#ifdef MB_HAVE_MPI
  return "MPI: Open MPI (mpirun, srun --mpi=pmix)";
#else
  return "MPI: not built";
#endif
}

}  // namespace mb::cli

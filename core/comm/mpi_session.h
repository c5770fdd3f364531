// MPI for runs across processes (mpirun, srun --mpi=pmix): one session per process, started
// by the front end when a launcher started it (comm/launch.h). The run's communicators reach
// the other processes through the session's link. Implemented in comm/mpi/ (the only folder
// that includes mpi.h) when the build has MPI (MB_HAVE_MPI).
#pragma once
#include <memory>

#include "comm/launch.h"
#include "comm/process_link.h"

namespace mb {

class MpiSession {
 public:
  virtual ~MpiSession() = default;   // MPI_Finalize (a healthy end only: see abort_run)

  virtual const ProcessInfo& info() const = 0;
  virtual std::shared_ptr<ProcessLink> link() const = 0;

  // Ends every process of the run now (MPI_Abort) with `exit_code`: after a failure, when
  // collectives may be left half done and MPI_Finalize could wait forever.
  [[noreturn]] virtual void abort_run(int exit_code) = 0;
};

// MPI_Init_thread (MPI_THREAD_SERIALIZED) for a process `launch` says was launched. Peers
// that fail, die or stop answering for `timeout_s` end a collective with a DeviceError
// naming them. Throws ConfigError, before MPI_Init, when `launch` says MPI cannot join it
// (LaunchInfo::unusable: srun without PMIx), and when MPI's world is not the launcher's; and
// DeviceError when MPI cannot start.
std::unique_ptr<MpiSession> start_mpi_session(const LaunchInfo& launch, double timeout_s);

}  // namespace mb

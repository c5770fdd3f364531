// MPI start-up and shutdown for a launched process (see comm/mpi_session.h).
#include <mpi.h>

#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "comm/mpi/mpi_check.h"
#include "comm/mpi/mpi_link.h"
#include "comm/mpi_session.h"
#include "util/error.h"

namespace mb {
namespace {

class MpiSessionImpl final : public MpiSession {
 public:
  MpiSessionImpl(const LaunchInfo& launch, double timeout_s) {
    // Before MPI_Init, which would abort the process (srun without --mpi=pmix).
    if (!launch.unusable.empty()) throw ConfigError(launch.unusable);
    int provided = MPI_THREAD_SINGLE;
    // The replicas' threads call MPI one at a time (see mpi_link.h): SERIALIZED is enough,
    // and cheaper than MULTIPLE in Open MPI.
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw DeviceError(fmt::format("MPI could not start (launched by {})", launch.launcher));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      throw DeviceError("this MPI library does not support MPI_THREAD_SERIALIZED, which the replicas' threads need");
    }
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != launch.processes) {
      MPI_Finalize();
      throw ConfigError(fmt::format(
          "launched by {} as one of {} processes ({}), but MPI sees {} process(es): the launcher and MPI are not "
          "connected (with Slurm use `srun --mpi=pmix`)",
          launch.launcher, launch.processes, launch.variable, size));
    }
    link_ = std::make_shared<mpi::MpiLink>(timeout_s);
    spdlog::debug("mpi: process {} of {} on {} (local {} of {})", link_->info().process, link_->info().processes,
                  link_->info().host, link_->info().local_process, link_->info().local_processes);
  }

  ~MpiSessionImpl() override {
    if (link_->broken()) {
      // MPI_Finalize would wait for the collective left in flight: end the whole run instead.
      MPI_Abort(MPI_COMM_WORLD, 1);
      _exit(1);
    }
    link_->close();
    MPI_Finalize();
  }

  const ProcessInfo& info() const override { return link_->info(); }
  std::shared_ptr<ProcessLink> link() const override { return link_; }

  [[noreturn]] void abort_run(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    _exit(exit_code);   // MPI_Abort does not return; should it, the process must still end
  }

 private:
  std::shared_ptr<mpi::MpiLink> link_;
};

}  // namespace

std::unique_ptr<MpiSession> start_mpi_session(const LaunchInfo& launch, double timeout_s) {
  return std::make_unique<MpiSessionImpl>(launch, timeout_s);
}

}  // namespace mb

// Launcher detection from the environment (see launch.h). Open MPI's mpirun sets
// OMPI_COMM_WORLD_*; Slurm's srun sets SLURM_STEP_NUM_TASKS/SLURM_PROCID for the tasks of a
// job step (SLURM_NTASKS alone is also set in an sbatch script that srun did not start);
// other PMI launchers (MPICH's hydra) set PMI_SIZE/PMI_RANK. srun reaches Open MPI through
// PMIx only (Debian's Open MPI has no Slurm PMI-1/2), and only with --mpi=pmix (or
// MpiDefault=pmix), which puts PMIX_RANK and PMIX_NAMESPACE in every task's environment:
// a Slurm step without them is told so before MPI_Init, where Open MPI would abort with exit 1
// and "OMPI was not built with SLURM's PMI support".
#include "comm/launch.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

namespace mb {
namespace {

// The variable's value as a non-negative int, or -1 when unset or not a number.
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return -1;
  int out = -1;
  const std::string_view s(v);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && out >= 0 ? out : -1;
}

bool fill(LaunchInfo& info, const char* launcher, const char* size_var, const char* rank_var) {
  const int size = env_int(size_var);
  if (size < 1) return false;
  info.launcher = launcher;
  info.variable = fmt::format("{}={}", size_var, size);
  info.processes = size;
  info.process = std::max(0, env_int(rank_var));
  return true;
}

}  // namespace

LaunchInfo detect_launch() {
  LaunchInfo info;
  if (fill(info, "mpirun (Open MPI)", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")) return info;
  if (fill(info, "srun (Slurm)", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID")) {
    const bool pmix = std::getenv("PMIX_RANK") != nullptr || std::getenv("PMIX_NAMESPACE") != nullptr;
    // One task without PMIx trains alone, as without srun (MPI_Init would abort there too).
    if (!pmix && info.processes == 1) return LaunchInfo{};
    if (!pmix)
      info.unusable = fmt::format(
          "started by srun (Slurm) as one of {} tasks ({}) without PMIx (no PMIX_RANK in the environment): Open MPI "
          "joins a Slurm job step through PMIx only, so run `srun --mpi=pmix ...` (or set MpiDefault=pmix in "
          "slurm.conf)",
          info.processes, info.variable);
    return info;
  }
  if (fill(info, "PMI", "PMI_SIZE", "PMI_RANK")) return info;
  return info;
}

}  // namespace mb

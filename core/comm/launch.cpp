// Launcher detection from the environment (see launch.h). Open MPI's mpirun sets
// OMPI_COMM_WORLD_*; Slurm's srun sets SLURM_STEP_NUM_TASKS/SLURM_PROCID for the tasks of a
// job step (SLURM_NTASKS alone is also set in an sbatch script that srun did not start);
// other PMI launchers (MPICH's hydra) set PMI_SIZE/PMI_RANK.
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
  if (fill(info, "srun (Slurm)", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID")) return info;
  if (fill(info, "PMI", "PMI_SIZE", "PMI_RANK")) return info;
  return info;
}

}  // namespace mb

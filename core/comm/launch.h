// How this process was started: alone, or as one of several by a launcher (mpirun, srun,
// another PMI launcher), read from the environment the launchers set, before (and without)
// MPI, so a build without MPI can say clearly that it cannot join such a run.
#pragma once
#include <string>

namespace mb {

struct LaunchInfo {
  std::string launcher;   // "" alone; "mpirun (Open MPI)", "srun (Slurm)", "PMI"
  std::string variable;   // the variable that told, e.g. "OMPI_COMM_WORLD_SIZE=2"
  int processes = 1;      // as the launcher says
  int process = 0;
  // Why MPI cannot join this launch, known before MPI_Init ("" when it can): srun without
  // PMIx's environment (no --mpi=pmix), where Open MPI would abort inside MPI_Init.
  std::string unusable;
  bool launched() const { return !launcher.empty(); }
};

LaunchInfo detect_launch();

}  // namespace mb

// allreduce_bench's MPI path (started by mpirun): the MPI link the trainer uses between
// processes against Open MPI's own MPI_Allreduce of the same buffer on the same transport.
#pragma once

namespace mb::bench {

// Every process of the run calls it; process 0 prints. Returns the exit code (1: a sum was
// not exact, 2: bad arguments or a build without MPI).
int run_mpi_bench(int argc, char** argv);

}  // namespace mb::bench

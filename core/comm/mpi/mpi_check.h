// MPI_CHECK(call): a failing MPI call throws mb::DeviceError naming the call, file:line and
// MPI's own error text (communicators are set to MPI_ERRORS_RETURN, so calls return codes).
#pragma once
#include <mpi.h>

namespace mb::mpi {
[[noreturn]] void throw_mpi_error(int status, const char* call, const char* file, int line);
}  // namespace mb::mpi

#define MPI_CHECK(call)                                                                         \
  do {                                                                                          \
    const int mb_status_ = (call);                                                              \
    if (mb_status_ != MPI_SUCCESS) ::mb::mpi::throw_mpi_error(mb_status_, #call, __FILE__, __LINE__); \
  } while (0)

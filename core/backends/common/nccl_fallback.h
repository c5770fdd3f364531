// What a single GPU does when NCCL cannot be initialised, decided without a GPU (issue 30).
// NCCL with ONE rank goes through its initialisation, the enqueue of the all-reduce, its
// capture into the step's graph and ncclCommAbort, but moves no data: it turns a one-rank
// in-place all-reduce into a no-op (out of place, a copy), and it refuses two ranks on one
// GPU. Nothing a single-GPU run computes needs NCCL, so a one-rank NCCL that fails to
// initialise (a container without the shared memory or sockets NCCL's set-up wants, a library
// mismatch) falls back, with a warning, to the in-GPU communicator's one-rank case (the sum of
// one buffer is that buffer), and the run record names it. With more ranks a failed
// initialisation fails the run: their sums need NCCL. A run being aborted (another rank failed,
// the user stopped it) is never a reason to fall back.
#pragma once
#include <string>
#include <string_view>

namespace mb {

enum class NcclInitFailure {
  Library,   // NCCL or CUDA returned an error
  TimedOut,  // the non-blocking initialisation did not finish within --timeout
  Aborted,   // the run was aborted meanwhile
};

bool nccl_init_falls_back(int ranks, NcclInitFailure failure);

// The communicator's name after the fallback (the run record's communicator).
inline constexpr std::string_view kNcclFallbackName = "in-gpu (one rank; NCCL failed to initialise)";

// The warning logged when it falls back: the device, NCCL's error, and what still runs.
std::string nccl_fallback_warning(int device, std::string_view error);

}  // namespace mb

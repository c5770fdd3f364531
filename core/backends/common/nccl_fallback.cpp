// A failed one-rank NCCL initialisation and the in-GPU fallback (see nccl_fallback.h).
#include "backends/common/nccl_fallback.h"

#include <fmt/format.h>

namespace mb {

bool nccl_init_falls_back(int ranks, NcclInitFailure failure) {
  return ranks == 1 && failure != NcclInitFailure::Aborted;
}

std::string nccl_fallback_warning(int device, std::string_view error) {
  return fmt::format(
      "cuda:{}: NCCL failed to initialise its one rank ({}); this single-GPU run uses the in-GPU communicator "
      "instead (a one-rank all-reduce moves no data either way, so the results are the same; only NCCL's own "
      "set-up, capture and abort go unexercised)",
      device, error);
}

}  // namespace mb

// The CUDA engine's options (see cuda_options.h).
#include "backends/common/cuda_options.h"

#include <algorithm>
#include <cmath>

namespace mb {

double fault_spin_cap_s(double timeout_s) {
  if (!(timeout_s > 0) || !std::isfinite(timeout_s)) return kFaultSpinMaxS;
  return std::min(kFaultSpinMaxS, kFaultSpinTimeouts * timeout_s);
}

CudaOptions cuda_options(const EngineOptions& o) {
  return {o.cuda_path, o.cuda_graphs, o.cudnn_tune_s, o.fault};
}

}  // namespace mb

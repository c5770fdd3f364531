// Launchers of the fused path's kernels (the arithmetic is backends/fused/fused_math.h; the
// CPU emulator runs the same functions). Each launch is asynchronous on `stream`, checks the
// launch, never allocates or synchronises: capturable. Reductions are deterministic (a fixed
// tree in each block, blocks writing disjoint outputs; Head's statistics summed in sample
// order by the block that finishes last), so results are run-to-run identical.
#pragma once
#include <cuda_runtime.h>

#include "backends/fused/fused_math.h"

namespace mb::cuda {

using fused::FusedKernel;

void launch_fused(FusedKernel k, const fused::FusedArgs& a, cudaStream_t stream);

// Forward only (evaluation): Conv1Fwd, Conv2Fwd, Fc1Fwd, Head without a.dlogits.
void launch_fused_forward(const fused::FusedArgs& a, cudaStream_t stream);

}  // namespace mb::cuda

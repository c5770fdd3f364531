// The CUDA engine's view of the run's engine options (config/engine_options.h), decided without
// a GPU (so it is tested here): the step path (cuDNN/cuBLAS with own epilogues, or the own fused
// kernels - the run record names it, engine.path), CUDA graphs, the seconds the warm-up may
// spend measuring cuDNN's algorithms per step shape, and an injected fault with how long it
// keeps the device busy. Every process of a run is given the same values (the choices are
// collective; the option table agrees on those that change the bits).
#pragma once
#include "config/engine_options.h"

namespace mb {

// How long an injected fault keeps the device busy at most, in a run whose waits give up after
// timeout_s (--timeout). A hang must outlast the stuck-thread path: the polled wait gives up
// after one --timeout and the trainer reports the thread stuck 2 x --timeout later (the CLI
// then exits, which ends the kernel with its context), so it spins for 4 x --timeout. Longer
// would only let the spinning kernel overlap what runs next on the GPU (a test's next steps,
// the check's next run) and distort its timings; never more than kFaultSpinMaxS. A stall is
// released by the engine at --timeout, long before.
inline constexpr double kFaultSpinTimeouts = 4;
inline constexpr double kFaultSpinMaxS = 120;
double fault_spin_cap_s(double timeout_s);

struct CudaOptions {
  CudaPath path = CudaPath::Cudnn;
  bool graphs = true;
  double tune_s = 3;
  FaultPlan fault;
};
CudaOptions cuda_options(const EngineOptions& options);

}  // namespace mb

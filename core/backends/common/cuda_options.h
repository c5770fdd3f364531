// The CUDA engine's environment switches, read in one place and parsed without a GPU (so
// they are tested here). None changes what a run computes except MB_CUDA_PATH, which the run
// record names (engine.path); all are for the GPU check, benchmarks and debugging:
//   MB_CUDA_PATH=cudnn|fused     the step's implementation: cuDNN/cuBLAS plus own epilogues
//                                (default), or the own fused kernels (at most 12 graph nodes)
//   MIRRORBENCH_NO_GRAPH=1       every step eager on every rank
//   MB_CUDNN_TUNE_S=S            seconds the warm-up may spend measuring cuDNN's algorithms
//                                per step shape (default 3; 0: the heuristic's first choice)
//   MB_INJECT_FAULT=KIND:STEP[:RANK]   a fault on purpose at training step STEP (counting
//                                from 1 over the run) on replica RANK (default 0):
//                                stall  the device spins until the engine gives up on it
//                                       (the polled wait's --timeout), then is released;
//                                hang   the device spins for fault_spin_cap_s(--timeout) whatever
//                                       the host does (a thread then sticks in the driver: the
//                                       stuck-thread path);
//                                abort  the replica throws in the middle of the step.
// Every process of a run must be given the same values (the choices are collective).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mb {

enum class CudaPath { Cudnn, Fused };
std::string to_string(CudaPath p);                // "cudnn", "fused"
CudaPath parse_cuda_path(std::string_view text);  // throws ConfigError naming MB_CUDA_PATH

enum class FaultKind { None, Stall, Hang, Abort };
struct FaultPlan {
  FaultKind kind = FaultKind::None;
  int64_t step = 0;  // the run's training step, from 1
  int rank = 0;
  bool active() const { return kind != FaultKind::None; }
  bool hits(int64_t at_step, int at_rank) const { return active() && at_step == step && at_rank == rank; }
};
FaultPlan parse_fault_plan(std::string_view text);  // "" = none; throws ConfigError naming MB_INJECT_FAULT
std::string to_string(const FaultPlan& f);          // "stall:30:0", "none"

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
// From the environment; throws ConfigError for a malformed value.
CudaOptions cuda_options_from_env();

}  // namespace mb

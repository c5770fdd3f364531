// How the engines compute, beyond the model and the precision: the kernel choices that the lab,
// the benchmarks, the GPU check and the fault tests make, one row each in the option table
// (config/train_options.cpp), recorded with the run ("engine_options"). Those that change the
// bits of the result (conv2's kernels, oneDNN's instruction set, the CUDA step path, how long
// cuDNN's algorithms are measured, the injected fault) must be the same in every process of a
// run and are in config_digest(); those that change only the speed (Highway's instruction set
// - every target gives the same digests, tests/data/golden_digests.json -, CUDA graphs) are
// not, so two hosts of different ISAs still train together.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mb {

// The CPU engine's conv2 + ReLU + pool2: the own Winograd kernels (the default: faster on every
// ISA measured, docs/benchmarks.md), oneDNN's convolution (Winograd where oneDNN has it on
// AVX-512, for forward and weight gradient), or oneDNN's direct convolution everywhere.
enum class Conv2Kernel { Own, Onednn, OnednnDirect };
std::string to_string(Conv2Kernel k);   // "own", "onednn", "onednn-direct"

// The CUDA engine's step: cuDNN/cuBLAS with own epilogues, or the own fused kernels.
enum class CudaPath { Cudnn, Fused };
std::string to_string(CudaPath p);      // "cudnn", "fused"

// A fault on purpose at training step `step` (counting from 1 over the run) on replica `rank`
// (GPU replicas, for the fault tests and the GPU check): stall - the device spins until the
// engine gives up on it (the polled wait's --timeout), then is released; hang - the device
// spins whatever the host does (a thread then sticks in the driver: the stuck-thread path);
// abort - the replica throws in the middle of the step.
enum class FaultKind { None, Stall, Hang, Abort };
struct FaultPlan {
  FaultKind kind = FaultKind::None;
  int64_t step = 0;
  int rank = 0;
  bool active() const { return kind != FaultKind::None; }
  bool hits(int64_t at_step, int at_rank) const { return active() && at_step == step && at_rank == rank; }
  bool operator==(const FaultPlan&) const = default;
};
std::string to_string(const FaultPlan& f);   // "stall:30:0", "none"
// "KIND:STEP[:RANK]" or "none"; throws ConfigError naming `flag`.
FaultPlan parse_fault_plan(std::string_view text, std::string_view flag = "--inject-fault");

struct EngineOptions {
  // Bits.
  Conv2Kernel cpu_conv2 = Conv2Kernel::Own;
  std::string onednn_isa;          // oneDNN's widest instruction set ("avx2", ...); "": oneDNN's own choice
  CudaPath cuda_path = CudaPath::Cudnn;
  double cudnn_tune_s = 3;         // per step shape measuring cuDNN's algorithms; 0: the heuristic's first
  FaultPlan fault;
  // Speed only.
  std::string simd_target;         // the own CPU kernels' Highway target ("avx2", ...); "": the best this CPU runs
  bool cuda_graphs = true;         // replay captured CUDA graphs where every rank can

  bool operator==(const EngineOptions&) const = default;
};

}  // namespace mb

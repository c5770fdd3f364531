// The fast CPU engine: oneDNN primitives and own Highway kernels, `threads` OpenMP threads
// inside one replica (1 by default: one core per replica).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "backends/replica_engine.h"
#include "config/engine_options.h"

namespace mb {

// threads: intra-replica threads (oneDNN's and the own kernels'); >= 1, else ConfigError.
// Results do not depend on it beyond float summation order inside oneDNN's primitives.
std::unique_ptr<ReplicaEngine> make_onednn_engine(int max_batch, int threads = 1, const ModelSpec& model = {},
                                                  Conv2Kernel conv2 = Conv2Kernel::Own);
std::string onednn_version();   // "2.6.3"

// The process-wide kernel choices of a run's engine options, before any replica thread runs:
// the cap on oneDNN's instruction set (once per process: oneDNN takes it before its first
// kernel; ConfigError for another cap later) and the own kernels' Highway target.
void apply_cpu_kernel_options(const EngineOptions& options);
// oneDNN's instruction set in effect ("avx512_core_bf16"; ONEDNN_MAX_CPU_ISA or --onednn-isa
// may cap it), and the names --onednn-isa takes, widest first.
std::string onednn_isa();
std::span<const std::string_view> onednn_isa_names();

// What the CPU engine runs on this machine, for version lines and run records:
// "Highway avx3, oneDNN avx512_core_amx, conv2 own winograd".
std::string cpu_kernels_summary(Conv2Kernel conv2 = Conv2Kernel::Own);

}  // namespace mb

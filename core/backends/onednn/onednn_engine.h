// The fast CPU engine: oneDNN primitives and own Highway kernels, `threads` OpenMP threads
// inside one replica (1 by default: one core per replica).
#pragma once
#include <memory>
#include <string>

#include "backends/replica_engine.h"

namespace mb {

// threads: intra-replica threads (oneDNN's and the own kernels'); >= 1, else ConfigError.
// Results do not depend on it beyond float summation order inside oneDNN's primitives.
std::unique_ptr<ReplicaEngine> make_onednn_engine(int max_batch, int threads = 1, const ModelSpec& model = {});
std::string onednn_version();   // "2.6.3"

// What the CPU engine runs on this machine, for version lines and run records:
// "Highway avx3, oneDNN avx512_core_amx, conv2 own winograd" (MB_SIMD_TARGET, ONEDNN_MAX_CPU_ISA
// and MB_CONV2 included).
std::string cpu_kernels_summary();

}  // namespace mb

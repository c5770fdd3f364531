// Which SIMD instruction set the hand-written CPU kernels (conv1_pool, blocked_pool, adam_kernel)
// run on. They are written once against Google Highway and compiled for every x86-64 target it
// knows; at run time the best one this CPU supports is used, or the one --simd-target names
// (config/engine_options.h). Every target computes the same bits.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace mb::onednn {

struct SimdTarget {
  std::string name;        // Highway's name in lower case: "avx3" (AVX-512), "avx2", "sse4", "ssse3", "scalar"
  bool supported = false;  // this CPU can run it
};

// Every target the kernels were compiled for, best first.
std::vector<SimdTarget> simd_targets();

// The target the kernels dispatch to now, e.g. "avx3".
std::string simd_target();

// Restricts the kernels to one target (any case; "avx512" is accepted for "avx3"); "" or "auto" returns to
// the best this CPU supports. Throws ConfigError for a name that was not compiled or that this
// CPU cannot run. Process-wide: call it between steps, never while kernels run on other threads.
void force_simd_target(std::string_view name);

}  // namespace mb::onednn

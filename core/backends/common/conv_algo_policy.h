// Which convolution algorithms a GPU engine may take, and how the ranks agree on one, without
// a GPU (the CUDA engine turns cuDNN's lists into these structs; the tests give made-up ones).
// Candidates come from the library's heuristic list; the untimed warm-up measures each one
// (within a deadline), every rank's timings are all-gathered, and the same rule picks one
// algorithm per pass on every rank, so the replicas of a run use the same kernels.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "config/precision.h"
#include "comm/communicator.h"

namespace mb {

// The math a candidate runs with (cuDNN's cudnnMathType_t, by meaning).
enum class MathKind { Default, Fma, TensorOp, TensorOpAllowConversion };
std::string to_string(MathKind m);  // "default", "fma", "tensor-op", "tensor-op-allow-conversion"

// FP32 runs stay comparable with the CPU reference: no tensor-op (TF32) math. TF32 runs may
// take anything.
bool math_allowed(Precision precision, MathKind math);

struct AlgoInfo {  // one entry of the library's heuristic ranking, in its order
  int algo = -1;
  bool supported = false;  // the library reported success for it
  bool deterministic = false;
  MathKind math = MathKind::Default;
  std::size_t workspace_bytes = 0;
};

// The entries this precision may run, in heuristic order: supported, math allowed, workspace
// at most max_workspace; deterministic ones first (results identical run to run), the others
// after them only when `allow_nondeterministic`.
std::vector<AlgoInfo> allowed_candidates(std::span<const AlgoInfo> ranking, Precision precision,
                                         std::size_t max_workspace, bool allow_nondeterministic);

// One rank's view of one pass, indexed by the algorithm's enum value.
inline constexpr int kMaxConvAlgos = 12;
struct PassTimings {
  std::array<float, kMaxConvAlgos> us;           // +inf: not a candidate here; NaN: candidate, not
                                                 // measured (deadline); else the measured median
  std::array<int8_t, kMaxConvAlgos> rank_order;  // position in this rank's candidate list, -1: none
  int32_t participates = 0;                      // 0: this rank has no plan for the pass (no samples)
  PassTimings();
};

struct AgreedAlgo {
  int algo = -1;
  bool measured = false;  // chosen by the gathered timings (else by rank 0's ranking)
  float worst_us = -1;    // the slowest rank's time for it, when measured
};

// Collective: every rank calls it with the same number of passes, in the same order. Per
// pass, among the algorithms that are candidates on every participating rank: the one whose
// slowest rank is fastest (ties: rank 0's ranking, then the lower enum value); when some rank
// measured none of them, the first in the lowest participating rank's ranking. The same
// answer on every rank; algo -1 when no rank participates. Throws DeviceError when no
// algorithm is a candidate on every participating rank.
std::vector<AgreedAlgo> agree_on_algorithms(std::span<const PassTimings> mine, Communicator& comm);

// The rule itself, on timings already gathered (all[rank][pass]): for the tests and the engine.
std::vector<AgreedAlgo> choose_algorithms(const std::vector<std::vector<PassTimings>>& all);

}  // namespace mb

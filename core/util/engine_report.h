// What a device engine chose and ran, for the run record (the CPU engines report nothing):
// the implementation path of its step, which step shapes replayed a captured CUDA graph and
// which ran eagerly, how many of the run's training steps did each (a shape agreed as a graph
// still runs eagerly at an injected fault's step, or after the graphs were dropped), how many
// nodes the standard step's graph has, and every convolution pass's algorithm with its math
// type and workspace, as the warm-up chose it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mb {

struct ConvChoice {
  std::string pass;       // "conv1 forward", "conv2 weight gradient", ...
  int64_t batch = 0;      // the plan's batch (this replica's share of the step)
  int algo = -1;          // the library's enum value
  std::string algo_name;  // "IMPLICIT_PRECOMP_GEMM"
  std::string math;       // "fma" (FP32 only), "tensor-op" (TF32), "default"
  int64_t workspace_bytes = 0;
  double time_us = -1;    // the median of its measured runs; -1: not measured
  std::string chosen_by;  // "measured" (fastest on every rank), "heuristic", "forced"
};

struct GraphNodes {  // the nodes of one captured step, by type
  int kernel = 0, memset = 0, memcpy = 0, other = 0;
  int total() const { return kernel + memset + memcpy + other; }
};

struct EngineReport {
  std::string path;                    // "cudnn" or "fused" (--cuda-path); empty: nothing reported
  std::vector<int64_t> graph_batches;  // global batches whose steps replay a captured graph
  std::vector<int64_t> eager_batches;  // global batches whose steps run eagerly
  int64_t graph_steps = -1;            // the run's training steps that replayed a captured graph ...
  int64_t eager_steps = -1;            // ... and those enqueued eagerly; -1: not counted (records of
                                       // schema 4 and before)
  GraphNodes nodes;                    // per step of the run's first (standard) shape, when a graph
  std::vector<ConvChoice> conv;        // the training shapes' convolution passes (cudnn path)
  bool reported() const { return !path.empty(); }
};

}  // namespace mb

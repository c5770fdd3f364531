// Capturing one training step into a CUDA graph, and finding the kernel nodes whose arguments
// change from step to step FROM THE CAPTURE ITSELF: right after such a kernel is enqueued on
// the capturing stream, cudaStreamGetCaptureInfo names the stream's current dependency set,
// which is exactly the node just captured. Its parameters (function, grid, block, shared
// memory) are read back from the graph, and a replay changes only the argument pack. Nothing
// here compares kernel function pointers with host stubs, whose correspondence to the nodes'
// functions CUDA does not document.
#pragma once
#include <array>
#include <cstddef>

#include "backends/cuda/cuda_raii.h"
#include "util/engine_report.h"

namespace mb::cuda {

// The kernels of a step whose arguments change per step: the one reading the step's sample
// indices, the one taking 1/global batch and accumulating the statistics, and Adam's.
enum class StepNode { Input, Loss, Adam };
inline constexpr std::size_t kStepNodes = 3;

struct UpdatableNode {
  cudaGraphNode_t node = nullptr;
  cudaKernelNodeParams params{};  // as captured; kernelParams are replaced at each update
  bool found() const { return node != nullptr; }
};

// One captured training step of one global batch.
struct CapturedStep {
  Graph graph;
  GraphExec exec;
  int n = 0;  // this replica's samples
  std::array<UpdatableNode, kStepNodes> nodes;
  GraphNodes counts;
};

// Marks nodes while a step is being captured on one stream. Eager steps pass no capture.
class StepCapture {
 public:
  explicit StepCapture(cudaStream_t stream);  // begins a thread-local capture
  ~StepCapture();                             // an unfinished capture is ended and discarded
  StepCapture(const StepCapture&) = delete;
  StepCapture& operator=(const StepCapture&) = delete;

  // Right after enqueueing `which` (a kernel) on the capturing stream. Throws DeviceError
  // when the capture does not show exactly one new kernel node.
  void mark(StepNode which);

  // Ends the capture, checks the marks (Adam always; Input and Loss when n > 0), counts the
  // nodes by type, instantiates and uploads the graph.
  CapturedStep finish(int n);

 private:
  cudaStream_t stream_;
  bool capturing_ = false;
  std::array<UpdatableNode, kStepNodes> nodes_;
};

// Sets the argument pack of a marked node in an instantiated graph, from its next launch on.
template <typename Args>
void set_node_args(cudaGraphExec_t exec, const UpdatableNode& n, const Args& args) {
  cudaKernelNodeParams p = n.params;
  void* packed[] = {const_cast<Args*>(&args)};
  p.kernelParams = packed;
  p.extra = nullptr;
  CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec, n.node, &p));
}

// Counts a graph's nodes by type.
GraphNodes count_nodes(cudaGraph_t graph);

}  // namespace mb::cuda

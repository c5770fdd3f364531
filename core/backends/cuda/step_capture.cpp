// Step capture with nodes taken from the capture (see step_capture.h).
#include "backends/cuda/step_capture.h"

#include <vector>

#include <fmt/format.h>

#include "util/error.h"

namespace mb::cuda {
namespace {

const char* node_name(StepNode n) {
  switch (n) {
    case StepNode::Input: return "input (sample indices)";
    case StepNode::Loss: return "loss (1/global batch, statistics)";
    case StepNode::Adam: return "Adam";
  }
  return "?";
}

}  // namespace

StepCapture::StepCapture(cudaStream_t stream) : stream_(stream) {
  // Thread-local: other replicas' threads keep working (and allocating) while this one captures.
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  capturing_ = true;
}

StepCapture::~StepCapture() {
  if (!capturing_) return;
  cudaGraph_t raw = nullptr;
  cudaStreamEndCapture(stream_, &raw);
  if (raw) cudaGraphDestroy(raw);
  cudaGetLastError();  // an invalidated capture leaves an error behind
}

void StepCapture::mark(StepNode which) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* deps = nullptr;
  std::size_t count = 0;
  CUDA_CHECK(cudaStreamGetCaptureInfo(stream_, &status, nullptr, nullptr, &deps, nullptr, &count));
  MB_CHECK(status == cudaStreamCaptureStatusActive, DeviceError,
           "the capture of the step is not active at its {} kernel", node_name(which));
  MB_CHECK(count == 1 && deps != nullptr, DeviceError,
           "the captured step's {} kernel is not the stream's only dependency ({} nodes)", node_name(which), count);
  UpdatableNode n;
  n.node = deps[0];
  cudaGraphNodeType type{};
  CUDA_CHECK(cudaGraphNodeGetType(n.node, &type));
  MB_CHECK(type == cudaGraphNodeTypeKernel, DeviceError, "the captured step's {} node is of type {}, not a kernel",
           node_name(which), int(type));
  CUDA_CHECK(cudaGraphKernelNodeGetParams(n.node, &n.params));
  nodes_[std::size_t(which)] = n;
}

CapturedStep StepCapture::finish(int n) {
  cudaGraph_t raw = nullptr;
  capturing_ = false;
  CUDA_CHECK(cudaStreamEndCapture(stream_, &raw));
  CapturedStep step;
  step.graph = Graph(raw);
  step.n = n;
  step.nodes = nodes_;
  MB_CHECK(step.nodes[std::size_t(StepNode::Adam)].found(), DeviceError, "the captured step has no marked Adam node");
  if (n > 0)
    MB_CHECK(step.nodes[std::size_t(StepNode::Input)].found() && step.nodes[std::size_t(StepNode::Loss)].found(),
             DeviceError, "the captured step of {} samples lacks its marked input or loss node", n);
  step.counts = count_nodes(raw);
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, raw, 0));
  step.exec = GraphExec(exec);
  CUDA_CHECK(cudaGraphUpload(exec, stream_));
  return step;
}

GraphNodes count_nodes(cudaGraph_t graph) {
  std::size_t count = 0;
  CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
  GraphNodes out;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_CHECK(cudaGraphNodeGetType(node, &type));
    switch (type) {
      case cudaGraphNodeTypeKernel:
        ++out.kernel;
        break;
      case cudaGraphNodeTypeMemset:
        ++out.memset;
        break;
      case cudaGraphNodeTypeMemcpy:
        ++out.memcpy;
        break;
      default:
        ++out.other;
        break;
    }
  }
  return out;
}

}  // namespace mb::cuda

// NCCL across distinct GPUs in one process (ncclCommInitAll, one rank per device, each
// driven by its own thread). Declared here, not only behind the factory, because the CUDA
// engine needs two things from it: to know that capturing its collectives into a CUDA graph
// is safe, and to register those graphs so they die before the NCCL communicators do.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/cuda_raii.h"
#include "comm/communicator.h"
#include "util/spin_barrier.h"

namespace mb::cuda {

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const std::vector<int>& devices);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int size() const override { return static_cast<int>(devices_.size()); }
  std::string name() const override { return "nccl"; }
  MemorySpace memory_space() const override { return MemorySpace::CudaDevice; }

  // `stream` is the caller's cudaStream_t on devices[rank]; the call only enqueues. A null
  // stream means "synchronous": wait for the device, run on an internal stream, wait again.
  void all_reduce_sum(int rank, float* data, std::size_t count, void* stream = nullptr) override;
  void broadcast(int rank, float* data, std::size_t count, int root, void* stream = nullptr) override;
  void barrier(int rank) override;
  void abort() override;

  // NCCL >= 2.26 blocks ncclCommDestroy until every CUDA graph that captured one of the
  // communicator's collectives is destroyed. Owners of such graphs register a callback that
  // destroys them; the destructor runs the callbacks first. `owner` is only a key.
  void add_graph_owner(const void* owner, std::function<void()> drop_graphs);
  void remove_graph_owner(const void* owner);

 private:
  void check_rank(int rank) const;
  cudaStream_t stream_for(int rank, void* stream);
  void finish(int rank, void* stream);

  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<Stream> internal_;     // for callers that pass no stream
  SpinBarrier barrier_;
  std::atomic<bool> aborted_{false};
  std::mutex owners_mutex_;
  std::map<const void*, std::function<void()>> graph_owners_;
};

}  // namespace mb::cuda

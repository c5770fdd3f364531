// NCCL between distinct GPUs, one rank per replica, in one process or across processes:
// every rank is initialised with ncclCommInitRank from its own thread, with the unique id
// that rank 0 created and broadcast over the host communicator (threads and/or MPI), so the
// same code serves cuda:0,cuda:1 in one process and `mpirun ... --devices cuda:local`.
// The control plane (statistics, digests) goes through that host communicator.
#pragma once
#include <atomic>
#include <memory>

#include "backends/cuda/cuda_raii.h"
#include "comm/communicator.h"

namespace mb::cuda {

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(int device, std::unique_ptr<Communicator> host);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string name() const override { return "nccl"; }
  MemorySpace memory_space() const override { return MemorySpace::CudaDevice; }
  void* stream() const override { return stream_.get(); }
  bool graph_capturable() const override { return true; }

  // Creates the NCCL communicator: collective, from this rank's own thread.
  void connect() override;

  // Enqueues on stream() only.
  void all_reduce_sum(float* data, std::size_t count) override;

  void broadcast_bytes(void* data, std::size_t bytes, int root) override { host_->broadcast_bytes(data, bytes, root); }
  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    host_->all_gather_bytes(mine, bytes, all);
  }
  void barrier() override { host_->barrier(); }
  void abort(const std::string& reason) override;
  CollectiveTimes take_times() override { return host_->take_times(); }

 private:
  const int device_;
  std::unique_ptr<Communicator> host_;
  Stream stream_;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
};

}  // namespace mb::cuda

// NCCL between distinct GPUs, one rank per replica, in one process or across processes (and
// with ONE rank too, so that a single GPU runs the code paths a multi-GPU run does: the
// non-blocking initialisation, the all-reduce enqueued and captured in the step's graph,
// ncclCommAbort; but no communication, since NCCL makes a one-rank in-place all-reduce a
// no-op, and two ranks on one GPU are refused: NCCL's collectives need two GPUs to be tested).
// A one-rank NCCL that fails to initialise falls back to the in-GPU communicator's one-rank
// case with a warning, and names itself so (backends/common/nccl_fallback.h):
// every rank is initialised with ncclCommInitRankConfig from its own thread, with the unique
// id that rank 0 created and broadcast over the host communicator (threads and/or MPI), so
// the same code serves cuda:0,cuda:1 in one process and `mpirun ... --devices cuda:local`.
// The control plane (statistics, digests) goes through that host communicator.
//
// Failure: the NCCL communicator is non-blocking (config.blocking = 0), so no NCCL call waits
// for a peer on the host; initialisation and enqueueing are polled with ncclCommGetAsyncError
// and give up when abort() was called. abort() may come from any thread and only raises a
// flag (and aborts the host communicator); the rank's own thread, polling its device through
// check(), then releases its graphs and calls cancel_device_work(), which is ncclCommAbort:
// the NCCL kernels that wait for the failed peer exit and the rank's streams drain. Every
// NCCL call of a rank thus happens on its own thread, and none after ncclCommAbort.
#pragma once
#include <atomic>
#include <memory>

#include "backends/common/nccl_fallback.h"
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
  std::string name() const override { return local_ ? std::string(kNcclFallbackName) : "nccl"; }
  MemorySpace memory_space() const override { return MemorySpace::CudaDevice; }
  void* stream() const override { return stream_.get(); }
  bool graph_capturable() const override { return true; }

  // Creates the NCCL communicator: collective, from this rank's own thread. With one rank, a
  // failed initialisation falls back (the header) instead of throwing.
  void connect() override;

  // Enqueues on stream() only.
  void all_reduce_sum(float* data, std::size_t count) override;

  void broadcast_bytes(void* data, std::size_t bytes, int root) override { host_->broadcast_bytes(data, bytes, root); }
  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    host_->all_gather_bytes(mine, bytes, all);
  }
  void barrier() override { host_->barrier(); }
  void abort(const std::string& reason) override;
  void check() override;
  void cancel_device_work() override;
  CollectiveTimes take_times() override { return host_->take_times(); }
  double timeout_s() const override { return host_->timeout_s(); }
  void note_progress(int64_t step) override { host_->note_progress(step); }
  std::string describe_stall() override { return host_->describe_stall(); }

 private:
  // Polls the communicator's state until NCCL has finished the call that returned
  // ncclInProgress; throws when it failed or abort() was called meanwhile, and StallError
  // after timeout_s() (a peer that never joins the initialisation, say).
  void wait_ready(const char* what);
  void initialise();
  [[noreturn]] void fail(ncclResult_t status, const char* what);

  const int device_;
  std::unique_ptr<Communicator> host_;
  Stream stream_;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  bool local_ = false;  // one rank without NCCL (the fallback): set by connect() only
};

}  // namespace mb::cuda

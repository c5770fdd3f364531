// NCCL all-reduce between distinct GPUs, one rank per replica (see nccl_communicator.h).
#include "backends/cuda/nccl_communicator.h"

#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_select.h"
#include "util/error.h"

namespace mb::cuda {

NcclCommunicator::NcclCommunicator(int device, std::unique_ptr<Communicator> host)
    : device_(device), host_(std::move(host)) {
  select_device(device_);
  stream_ = make_stream();
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  cudaSetDevice(device_);
  const ncclResult_t status = aborted_ ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
  if (status != ncclSuccess) spdlog::warn("nccl: closing rank {} failed: {}", rank(), ncclGetErrorString(status));
}

void NcclCommunicator::connect() {
  if (comm_ || size() == 1) return;   // one rank has nothing to exchange
  CUDA_CHECK(cudaSetDevice(device_));
  ncclUniqueId id{};
  if (rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  host_->broadcast_bytes(&id, sizeof id, 0);
  NCCL_CHECK(ncclCommInitRank(&comm_, size(), id, rank()));
  spdlog::debug("nccl: rank {} of {} on cuda:{} connected", rank(), size(), device_);
}

void NcclCommunicator::all_reduce_sum(float* data, std::size_t count) {
  if (aborted_) throw DeviceError("nccl: communicator aborted after another replica failed");
  if (count == 0 || size() == 1) return;
  MB_CHECK(comm_ != nullptr, Error, "nccl: rank {} used before connect()", rank());
  CUDA_CHECK(cudaSetDevice(device_));
  NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_.get()));
}

void NcclCommunicator::abort(const std::string& reason) {
  // Host waits end now. The NCCL communicator itself is aborted (not destroyed) when this
  // object is, after the engine that may still replay graphs holding its collectives.
  aborted_ = true;
  host_->abort(reason);
}

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices,
                                                                   std::vector<std::unique_ptr<Communicator>> host) {
  MB_CHECK(!devices.empty(), ConfigError, "an NCCL communicator needs at least one GPU");
  MB_CHECK(devices.size() == host.size(), Error, "nccl: {} GPUs but {} host communicators", devices.size(),
           host.size());
  std::set<int> seen;
  for (int d : devices)
    MB_CHECK(seen.insert(d).second, ConfigError,
             "cuda:{} is listed twice: NCCL needs distinct GPUs (replicas sharing a GPU use the in-GPU communicator)",
             d);
  std::vector<std::unique_ptr<Communicator>> out;
  for (std::size_t i = 0; i < devices.size(); ++i)
    out.push_back(std::make_unique<NcclCommunicator>(devices[i], std::move(host[i])));
  return out;
}

}  // namespace mb::cuda

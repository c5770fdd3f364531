// NCCL all-reduce/broadcast between distinct GPUs of this process, one thread per rank.
#include "backends/cuda/nccl_communicator.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_select.h"
#include "util/error.h"

namespace mb::cuda {

NcclCommunicator::NcclCommunicator(const std::vector<int>& devices)
    : devices_(devices), barrier_(static_cast<int>(std::max<std::size_t>(1, devices.size()))) {
  MB_CHECK(!devices_.empty(), ConfigError, "an NCCL communicator needs at least one GPU");
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      MB_CHECK(devices_[i] != devices_[j], ConfigError,
               "cuda:{} is listed twice: NCCL needs distinct GPUs (replicas sharing a GPU use the in-GPU "
               "communicator)",
               devices_[i]);
    }
  }
  for (int d : devices_) {
    select_device(d);
    internal_.push_back(make_stream());
  }
  comms_.assign(devices_.size(), nullptr);
  // Last, so nothing after it can throw and leak the communicators.
  try {
    NCCL_CHECK(ncclCommInitAll(comms_.data(), size(), devices_.data()));
  } catch (const DeviceError& e) {
    // One rank has nothing to exchange: a sandbox where NCCL cannot initialise (no shared
    // memory, odd topology files) must not stop single-GPU training.
    if (size() != 1) throw;
    comms_.assign(1, nullptr);
    spdlog::warn("nccl: {}; a single GPU needs no communication, continuing without NCCL", e.what());
  }
  spdlog::debug("nccl: communicator over {} GPU(s) ready", size());
}

NcclCommunicator::~NcclCommunicator() {
  std::map<const void*, std::function<void()>> owners;
  {
    std::lock_guard lock(owners_mutex_);
    owners.swap(graph_owners_);
  }
  for (auto& [owner, drop] : owners) {
    try {
      drop();
    } catch (...) {
      // A destructor never throws; the graph is lost either way.
    }
  }
  for (std::size_t r = 0; r < comms_.size(); ++r) {
    if (!comms_[r]) continue;
    cudaSetDevice(devices_[r]);
    const ncclResult_t status = ncclCommDestroy(comms_[r]);
    if (status != ncclSuccess) spdlog::warn("nccl: destroying rank {} failed: {}", r, ncclGetErrorString(status));
  }
}

void NcclCommunicator::check_rank(int rank) const {
  MB_CHECK(rank >= 0 && rank < size(), Error, "nccl: rank {} out of range (communicator of {})", rank, size());
  if (aborted_.load()) throw DeviceError("nccl: communicator aborted after another replica failed");
}

cudaStream_t NcclCommunicator::stream_for(int rank, void* stream) {
  CUDA_CHECK(cudaSetDevice(devices_[rank]));
  if (stream) return static_cast<cudaStream_t>(stream);
  CUDA_CHECK(cudaDeviceSynchronize());  // the caller's data may come from any stream
  return internal_[rank].get();
}

void NcclCommunicator::finish(int rank, void* stream) {
  if (!stream) CUDA_CHECK(cudaStreamSynchronize(internal_[rank].get()));
}

void NcclCommunicator::all_reduce_sum(int rank, float* data, std::size_t count, void* stream) {
  check_rank(rank);
  if (count == 0 || !comms_[rank]) return;  // no NCCL only for a single rank: identity
  cudaStream_t s = stream_for(rank, stream);
  NCCL_CHECK(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comms_[rank], s));
  finish(rank, stream);
}

void NcclCommunicator::broadcast(int rank, float* data, std::size_t count, int root, void* stream) {
  check_rank(rank);
  MB_CHECK(root >= 0 && root < size(), Error, "nccl: broadcast root {} out of range (communicator of {})", root,
           size());
  if (count == 0 || !comms_[rank]) return;
  cudaStream_t s = stream_for(rank, stream);
  NCCL_CHECK(ncclBroadcast(data, data, count, ncclFloat, root, comms_[rank], s));
  finish(rank, stream);
}

void NcclCommunicator::barrier(int rank) {
  check_rank(rank);
  barrier_.arrive_and_wait();
}

void NcclCommunicator::abort() {
  // Host waits end now. ncclCommAbort is deliberately not called: it would wait for the
  // engines' CUDA graphs (see add_graph_owner) that other threads may still be replaying.
  aborted_.store(true);
  barrier_.abort();
}

void NcclCommunicator::add_graph_owner(const void* owner, std::function<void()> drop_graphs) {
  std::lock_guard lock(owners_mutex_);
  graph_owners_[owner] = std::move(drop_graphs);
}

void NcclCommunicator::remove_graph_owner(const void* owner) {
  std::lock_guard lock(owners_mutex_);
  graph_owners_.erase(owner);
}

std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>& devices) {
  return std::make_unique<NcclCommunicator>(devices);
}

}  // namespace mb::cuda

// NCCL all-reduce between distinct GPUs, one rank per replica (see nccl_communicator.h).
#include "backends/cuda/nccl_communicator.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/common/nccl_fallback.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_select.h"
#include "util/deadline.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb::cuda {
namespace {

// A healthy finalisation takes milliseconds; past this (or --timeout, if shorter) the
// communicator is aborted instead.
constexpr double kFinalizeTimeoutS = 10;

void pause(int round) {
  if (round < 200) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(50));
}

}  // namespace

NcclCommunicator::NcclCommunicator(int device, std::unique_ptr<Communicator> host)
    : device_(device), host_(std::move(host)) {
  select_device(device_);
  stream_ = make_stream();
}

NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  cudaSetDevice(device_);
  ncclResult_t status = ncclSuccess;
  if (!aborted_) {
    // Non-blocking: finalise (flush) and poll, then free locally. Engines, and with them the
    // graphs holding this communicator's collectives, are gone by now (the trainer's order).
    status = ncclCommFinalize(comm_);
    const Deadline deadline = Deadline::after(std::min(kFinalizeTimeoutS, timeout_s()));
    ncclResult_t state = status;
    for (int round = 0; state == ncclInProgress && !deadline.passed(); ++round) {
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      pause(round);
    }
    status = state == ncclSuccess ? ncclCommDestroy(comm_) : state;
    if (state != ncclSuccess) aborted_ = true;
  }
  if (aborted_) status = ncclCommAbort(comm_);
  if (status != ncclSuccess && status != ncclInProgress)
    spdlog::warn("nccl: closing rank {} failed: {}", rank(), ncclGetErrorString(status));
  comm_ = nullptr;
}

void NcclCommunicator::fail(ncclResult_t status, const char* what) {
  std::string text = ncclGetErrorString(status);
  const char* last = ncclGetLastError(comm_);
  if (last && last[0] != '\0') text += std::string("; ") + last;
  throw DeviceError(fmt::format("nccl: rank {} on cuda:{}: {} failed: {}", rank(), device_, what, text));
}

void NcclCommunicator::wait_ready(const char* what) {
  ncclResult_t state = ncclInProgress;
  const Deadline deadline = Deadline::after(timeout_s());
  for (int round = 0;; ++round) {
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) fail(r, what);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) fail(state, what);
    // The peer this call waits for may have failed: then give up (the rank's thread calls
    // cancel_device_work after releasing its graphs, or the destructor aborts).
    if (aborted_) throw BarrierAborted();
    if (round % 256 == 255 && deadline.passed()) {
      const std::string why = describe_stall();
      throw StallError(fmt::format("nccl: rank {} on cuda:{}: {} has not completed within {:g} s (--timeout): a "
                                   "peer is stuck or never joined{}",
                                   rank(), device_, what, deadline.seconds(), why.empty() ? "" : " (" + why + ")"));
    }
    pause(round);
  }
}

void NcclCommunicator::connect() {
  // One rank too: no data moves (NCCL makes a one-rank in-place all-reduce a no-op), but the
  // same initialisation, capture and abort paths as a multi-GPU run. Where that one rank
  // cannot be initialised, the run goes on without NCCL (nccl_fallback.h).
  if (comm_ || local_) return;
  try {
    initialise();
  } catch (const DeviceError& e) {  // StallError too: a one-rank initialisation waits for no peer
    NcclInitFailure why = NcclInitFailure::Library;
    if (dynamic_cast<const StallError*>(&e) != nullptr) why = NcclInitFailure::TimedOut;
    if (aborted_) why = NcclInitFailure::Aborted;
    if (!nccl_init_falls_back(size(), why)) throw;
    spdlog::warn("{}", nccl_fallback_warning(device_, e.what()));
    local_ = true;
  }
}

void NcclCommunicator::initialise() {
  CUDA_CHECK(cudaSetDevice(device_));
  ncclUniqueId id{};
  if (rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  host_->broadcast_bytes(&id, sizeof id, 0);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t r = ncclCommInitRankConfig(&comm_, size(), id, rank(), &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (comm_) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    NCCL_CHECK(r);
  }
  try {
    wait_ready("ncclCommInitRankConfig");
  } catch (...) {
    // A half-initialised communicator is aborted here: no graph holds it yet.
    ncclCommAbort(comm_);
    comm_ = nullptr;
    throw;
  }
  spdlog::debug("nccl: rank {} of {} on cuda:{} connected", rank(), size(), device_);
}

void NcclCommunicator::all_reduce_sum(float* data, std::size_t count) {
  if (aborted_) throw BarrierAborted();
  if (count == 0 || local_) return;  // local_: one rank, whose sum is its own buffer
  MB_CHECK(comm_ != nullptr, Error, "nccl: rank {} used before connect() (or after a failure)", rank());
  CUDA_CHECK(cudaSetDevice(device_));
  const ncclResult_t r = ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream_.get());
  if (r == ncclInProgress) wait_ready("ncclAllReduce");
  else if (r != ncclSuccess) fail(r, "ncclAllReduce");
}

void NcclCommunicator::check() {
  if (aborted_) throw BarrierAborted();
  host_->check();
  if (!comm_) return;
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  if (r != ncclSuccess) fail(r, "ncclCommGetAsyncError");
  if (state != ncclSuccess && state != ncclInProgress) fail(state, "a collective");
}

void NcclCommunicator::cancel_device_work() {
  aborted_ = true;
  if (!comm_) return;
  cudaSetDevice(device_);
  const ncclResult_t status = ncclCommAbort(comm_);
  if (status != ncclSuccess) spdlog::warn("nccl: aborting rank {} failed: {}", rank(), ncclGetErrorString(status));
  comm_ = nullptr;
}

void NcclCommunicator::abort(const std::string& reason) {
  // Host waits end now; the device side ends on the rank's own thread (header).
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

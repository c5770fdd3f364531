// The CUDA backend's public face. Deliberately free of CUDA headers: the rest of the core
// includes only this. Implemented in this folder when MB_HAVE_CUDA is defined.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backends/devices.h"

namespace mb::cuda {

// GPUs usable by this process; when none, *why_none says why (no driver, no device, ...).
std::vector<GpuInfo> list_gpus(std::string* why_none);

std::unique_ptr<ReplicaEngine> make_cuda_engine(int device, int max_batch);

// Distinct GPUs, one rank each, NCCL (ncclCommInitAll in one process).
std::unique_ptr<Communicator> make_nccl_communicator(const std::vector<int>& devices);

// Several replicas on ONE GPU: a reduction kernel over the replicas' buffers (simulated).
std::unique_ptr<Communicator> make_in_gpu_communicator(int ranks, int device);

// "CUDA 13.0 (driver 13.0), cuDNN 9.x, NCCL 2.28.x".
std::string versions();

}  // namespace mb::cuda

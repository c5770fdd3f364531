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

// `options`: the step path, CUDA graphs, cuDNN's tuning budget and an injected fault.
std::unique_ptr<ReplicaEngine> make_cuda_engine(int device, int max_batch, Precision precision = Precision::Fp32,
                                               const ModelSpec& model = {}, const EngineOptions& options = {});

// This process's replicas on distinct GPUs `devices`, one NCCL rank each (in this process or
// across processes: the host communicators, one per replica, carry the unique id and the
// control plane). connect() on each rank's thread creates the NCCL communicator.
std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices,
                                                                   std::vector<std::unique_ptr<Communicator>> host);

// Several replicas of one process on ONE GPU: a reduction kernel over the replicas' buffers
// (simulated), the control plane over the host communicators.
std::vector<std::unique_ptr<Communicator>> make_in_gpu_communicators(int device,
                                                                     std::vector<std::unique_ptr<Communicator>> host);

// "CUDA 13.0 (driver 13.0), cuDNN 9.x, NCCL 2.28.x".
std::string versions();

}  // namespace mb::cuda

// Making a CUDA ordinal current with a clear error when it does not exist or no driver is
// installed, and the one wording for "why no GPU" shared by list_gpus and the factories.
#pragma once
#include <string>

#include <cuda_runtime.h>

namespace mb::cuda {

// Why cudaGetDeviceCount failed, in user terms: "no NVIDIA driver found", "no CUDA device", ...
std::string describe_no_gpu(cudaError_t status);

// Checks that cuda:<device> exists and makes it current for the calling thread. Throws
// DeviceError naming the device ("cuda:1: no such device, this machine has 1 CUDA device").
// For constructors; per-call paths just cudaSetDevice an ordinal already checked.
void select_device(int device);

}  // namespace mb::cuda

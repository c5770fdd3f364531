// Check macros for the CUDA runtime, cuBLAS, cuDNN and NCCL: a failing call throws
// mb::DeviceError naming the call, the file:line and the library's own error text.
// Only core/backends/cuda includes this (it pulls in the CUDA headers).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

namespace mb::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace mb::cuda

#define CUDA_CHECK(call)                                                                            \
  do {                                                                                              \
    const cudaError_t mb_status_ = (call);                                                          \
    if (mb_status_ != cudaSuccess) ::mb::cuda::throw_cuda_error(mb_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                          \
  do {                                                                                              \
    const cublasStatus_t mb_status_ = (call);                                                       \
    if (mb_status_ != CUBLAS_STATUS_SUCCESS)                                                        \
      ::mb::cuda::throw_cublas_error(mb_status_, #call, __FILE__, __LINE__);                        \
  } while (0)

#define CUDNN_CHECK(call)                                                                           \
  do {                                                                                              \
    const cudnnStatus_t mb_status_ = (call);                                                        \
    if (mb_status_ != CUDNN_STATUS_SUCCESS) ::mb::cuda::throw_cudnn_error(mb_status_, #call, __FILE__, __LINE__); \
  } while (0)

#define NCCL_CHECK(call)                                                                            \
  do {                                                                                              \
    const ncclResult_t mb_status_ = (call);                                                         \
    if (mb_status_ != ncclSuccess) ::mb::cuda::throw_nccl_error(mb_status_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// The throwing halves of the check macros in cuda_check.h: one message format for all four
// libraries, "<library> error: <text> (<code>) in <call> at <file>:<line>".
#include "backends/cuda/cuda_check.h"

#include <cstring>
#include <string>

#include <fmt/format.h>

#include "util/error.h"

namespace mb::cuda {
namespace {

// "core/backends/cuda/x.cpp" rather than the build machine's absolute path.
std::string short_path(const char* file) {
  const char* p = std::strstr(file, "core/backends/");
  return p ? std::string(p) : std::string(file);
}

[[noreturn]] void raise(const char* library, const std::string& text, long code, const char* call, const char* file,
                        int line) {
  throw DeviceError(fmt::format("{} error: {} ({}) in {} at {}:{}", library, text, code, call, short_path(file), line));
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  raise("CUDA", fmt::format("{} [{}]", cudaGetErrorString(status), cudaGetErrorName(status)), long(status), call,
        file, line);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  raise("cuBLAS", cublasGetStatusString(status), long(status), call, file, line);
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cudnnGetLastErrorString adds the cause cuDNN 9 recorded (e.g. which check failed).
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string text = cudnnGetErrorString(status);
  if (detail[0] != '\0') text += std::string("; ") + detail;
  raise("cuDNN", text, long(status), call, file, line);
}

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  std::string text = ncclGetErrorString(status);
  const char* last = ncclGetLastError(nullptr);
  if (last && last[0] != '\0') text += std::string("; ") + last;
  raise("NCCL", text, long(status), call, file, line);
}

}  // namespace mb::cuda

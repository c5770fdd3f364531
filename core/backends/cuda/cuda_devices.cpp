// GPU discovery and version reporting. The one CUDA behaviour a GPU-less machine can run:
// with no driver or no device, list_gpus returns nothing and says why instead of throwing.
#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_select.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

std::string version_text(int code) {  // CUDA encodes 13.0 as 13000
  return fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
}

}  // namespace

std::string describe_no_gpu(cudaError_t status) {
  int driver = 0;
  const bool have_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  switch (status) {
    case cudaErrorNoDevice: return "no CUDA device";
    case cudaErrorStubLibrary: return "no NVIDIA driver found (only the CUDA stub library is installed)";
    case cudaErrorInsufficientDriver: {
      if (!have_driver) return "no NVIDIA driver found";
      int runtime = 0;
      cudaRuntimeGetVersion(&runtime);
      return fmt::format("the NVIDIA driver supports CUDA {} but this build needs CUDA {}: update the driver",
                         version_text(driver), version_text(runtime));
    }
    case cudaErrorDevicesUnavailable: return "every CUDA device is busy or in exclusive/prohibited compute mode";
    default:
      return fmt::format("CUDA unavailable: {} [{}]", cudaGetErrorString(status), cudaGetErrorName(status));
  }
}

void select_device(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // do not leave the failure for an unrelated later check
    throw DeviceError(fmt::format("cuda:{}: {}", device, describe_no_gpu(status)));
  }
  MB_CHECK(device >= 0 && device < count, DeviceError, "cuda:{}: no such device, this machine has {} CUDA device(s)",
           device, count);
  CUDA_CHECK(cudaSetDevice(device));
}

std::vector<GpuInfo> list_gpus(std::string* why_none) {
  std::vector<GpuInfo> gpus;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (why_none) *why_none = describe_no_gpu(status);
    return gpus;
  }
  std::string skipped;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    const cudaError_t err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      cudaGetLastError();
      skipped += fmt::format("{}cuda:{}: {}", skipped.empty() ? "" : "; ", i, cudaGetErrorString(err));
      continue;
    }
    GpuInfo g;
    g.index = i;
    g.name = prop.name;
    g.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    g.cc_major = prop.major;
    g.cc_minor = prop.minor;
    gpus.push_back(std::move(g));
  }
  if (gpus.empty() && why_none) *why_none = skipped.empty() ? "no CUDA device" : skipped;
  return gpus;
}

std::string versions() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  const bool have_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  cudaGetLastError();
  const std::size_t dnn = cudnnGetVersion();  // 9.19.0 -> 91900
  int nccl = 0;
  const bool have_nccl = ncclGetVersion(&nccl) == ncclSuccess;
  // NCCL >= 2.9 encodes 2.28.9 as 22809 (major*10000 + minor*100 + patch).
  return fmt::format("CUDA {} ({}), cuDNN {}.{}.{}, NCCL {}", version_text(runtime),
                     have_driver ? "driver " + version_text(driver) : std::string("no NVIDIA driver"), dnn / 10000,
                     (dnn % 10000) / 100, dnn % 100,
                     have_nccl ? fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100)
                               : std::string("unknown"));
}

}  // namespace mb::cuda

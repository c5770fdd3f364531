// DeviceFloats: plain synchronous copies, for tests and tools (never on a training path).
#include "backends/cuda/device_floats.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_select.h"
#include "util/error.h"

namespace mb::cuda {

DeviceFloats::DeviceFloats(int device, std::size_t count) : device_(device), count_(count) {
  select_device(device);
  if (count == 0) return;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, count * sizeof(float)));
  ptr_ = static_cast<float*>(p);
  CUDA_CHECK(cudaMemset(ptr_, 0, count * sizeof(float)));
}

DeviceFloats::~DeviceFloats() {
  if (ptr_) {
    cudaSetDevice(device_);
    cudaFree(ptr_);
  }
}

void DeviceFloats::upload(std::span<const float> values) {
  MB_CHECK(values.size() <= count_, Error, "cuda:{}: {} floats do not fit a buffer of {}", device_, values.size(),
           count_);
  copy_to_device(device_, ptr_, values);
}

void copy_to_device(int device, float* dst, std::span<const float> values) {
  CUDA_CHECK(cudaSetDevice(device));
  if (values.empty()) return;
  CUDA_CHECK(cudaMemcpy(dst, values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice));
  // A pageable-to-device cudaMemcpy may return before its DMA has landed, and it runs on the
  // legacy stream, which the engines' non-blocking streams do not wait for.
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<float> DeviceFloats::download() const {
  std::vector<float> out(count_);
  CUDA_CHECK(cudaSetDevice(device_));
  if (count_) CUDA_CHECK(cudaMemcpy(out.data(), ptr_, count_ * sizeof(float), cudaMemcpyDeviceToHost));
  return out;
}

void synchronize_stream(int device, void* stream) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

}  // namespace mb::cuda

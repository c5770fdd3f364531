// A float buffer in one GPU's memory behind a CUDA-free header, for code outside this
// folder that drives the device communicators directly (tests, benchmarks).
#pragma once
#include <cstddef>
#include <span>
#include <vector>

namespace mb::cuda {

class DeviceFloats {
 public:
  DeviceFloats(int device, std::size_t count);   // zero-filled; throws DeviceError
  ~DeviceFloats();
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  float* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  void upload(std::span<const float> values);     // values.size() <= size(); synchronous
  std::vector<float> download() const;            // synchronous

 private:
  int device_;
  float* ptr_ = nullptr;
  std::size_t count_;
};

// Copies host floats into device memory someone else owns (a CUDA engine's grad_buffer()),
// on cuda:<device>, and waits for the whole device, so that work the owner enqueues next on
// any stream sees the values. For tests and tools.
void copy_to_device(int device, float* dst, std::span<const float> values);

// Waits for the work queued on `stream` (a cudaStream_t, e.g. Communicator::stream()).
void synchronize_stream(int device, void* stream);

}  // namespace mb::cuda

// RAII owners for every CUDA-side resource the backend holds: device and pinned buffers,
// streams, events, cuBLAS/cuDNN handles, cuDNN descriptors and CUDA graphs. Creation
// throws DeviceError (via the check macros); destructors never throw and ignore errors,
// because they also run while unwinding from a device failure.
#pragma once
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "backends/cuda/cuda_check.h"

namespace mb::cuda {

// Typed device memory from cudaMalloc; size fixed until allocate() is called again.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { allocate(count); }
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void allocate(std::size_t count) {
    reset();
    if (count == 0) return;
    void* p = nullptr;
    CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    count_ = count;
  }
  void reset() noexcept {
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    count_ = 0;
  }
  T* get() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Page-locked host memory: the source/target of truly asynchronous copies.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t count) {
    if (count == 0) return;
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, count * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    count_ = count;
  }
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFreeHost(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  T* get() const { return ptr_; }
  T& operator[](std::size_t i) const { return ptr_[i]; }
  std::size_t size() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

// Opaque-handle owners: the CUDA libraries' handles are all pointers to incomplete structs,
// so std::unique_ptr with a non-throwing deleter is the whole wrapper.
template <typename Handle, auto Destroy>
struct HandleDeleter {
  void operator()(Handle h) const noexcept { (void)Destroy(h); }
};
template <typename Handle, auto Destroy>
using UniqueHandle = std::unique_ptr<std::remove_pointer_t<Handle>, HandleDeleter<Handle, Destroy>>;

using Stream = UniqueHandle<cudaStream_t, cudaStreamDestroy>;
using Event = UniqueHandle<cudaEvent_t, cudaEventDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, cublasDestroy>;
using CudnnHandle = UniqueHandle<cudnnHandle_t, cudnnDestroy>;
using TensorDesc = UniqueHandle<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = UniqueHandle<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = UniqueHandle<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using Graph = UniqueHandle<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = UniqueHandle<cudaGraphExec_t, cudaGraphExecDestroy>;

// Non-blocking: never implicitly synchronises with the legacy default stream, so one
// replica's work (or graph capture) is not serialised behind another's.
inline Stream make_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

inline Event make_event(bool timing) {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return Event(e);
}

inline CublasHandle make_cublas() {
  cublasHandle_t h = nullptr;
  CUBLAS_CHECK(cublasCreate(&h));
  return CublasHandle(h);
}

inline CudnnHandle make_cudnn() {
  cudnnHandle_t h = nullptr;
  CUDNN_CHECK(cudnnCreate(&h));
  return CudnnHandle(h);
}

inline TensorDesc make_tensor_desc(int n, int c, int h, int w) {
  cudnnTensorDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  TensorDesc owned(d);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  return owned;
}

inline FilterDesc make_filter_desc(int k, int c, int h, int w) {
  cudnnFilterDescriptor_t d = nullptr;
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&d));
  FilterDesc owned(d);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, k, c, h, w));
  return owned;
}

}  // namespace mb::cuda

namespace mb::cuda {

// One int in page-locked host memory that kernels read through its device alias while the
// host writes it: a release flag for a kernel that waits on purpose (fault injection).
class MappedFlag {
 public:
  MappedFlag() {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, sizeof(int), cudaHostAllocMapped));
    host_ = static_cast<volatile int*>(p);
    *host_ = 0;
    void* d = nullptr;
    const cudaError_t r = cudaHostGetDevicePointer(&d, p, 0);
    if (r != cudaSuccess) {
      cudaFreeHost(p);
      CUDA_CHECK(r);
    }
    device_ = static_cast<const volatile int*>(d);
  }
  ~MappedFlag() { cudaFreeHost(const_cast<int*>(host_)); }
  MappedFlag(const MappedFlag&) = delete;
  MappedFlag& operator=(const MappedFlag&) = delete;

  void set() const { *host_ = 1; }
  const volatile int* device() const { return device_; }

 private:
  volatile int* host_ = nullptr;
  const volatile int* device_ = nullptr;
};

}  // namespace mb::cuda

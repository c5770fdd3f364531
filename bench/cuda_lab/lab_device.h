// The kernel lab's device side, shared by its parts: buffers filled from host vectors, the
// median of timed launches (CUDA events), and the lab's one stream. CUDA headers: this lab is
// CUDA by nature (it runs the backend's kernels one by one), built only with the backend.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_raii.h"
#include "lab_cases.h"
#include "util/engine_report.h"

namespace mb::lab {

struct LabOptions {
  std::vector<int> batches;
  int reps = 20;    // timed launches per case (the median is reported)
  int steps = 200;  // timed training steps per path
  double tune_s = 3;   // --cudnn-tune: the engine's warm-up measures cuDNN's algorithms this long per shape
  Peak peak;
};

template <typename T>
cuda::DeviceBuffer<T> to_device(const std::vector<T>& host, cudaStream_t s) {
  cuda::DeviceBuffer<T> d(std::max<std::size_t>(1, host.size()));
  if (!host.empty())
    CUDA_CHECK(cudaMemcpyAsync(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, s));
  return d;
}

template <typename T>
void upload(cuda::DeviceBuffer<T>& d, const std::vector<T>& host, cudaStream_t s) {
  if (d.size() < host.size()) d.allocate(host.size());
  if (!host.empty())
    CUDA_CHECK(cudaMemcpyAsync(d.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}

template <typename T>
std::vector<T> to_host(const T* d, std::size_t count, cudaStream_t s) {
  std::vector<T> h(count);
  if (count) CUDA_CHECK(cudaMemcpyAsync(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return h;
}

// The median over `reps` single launches of fn, after two untimed ones, in microseconds.
inline double time_us(cudaStream_t s, int reps, const std::function<void()>& fn) {
  cuda::Event a = cuda::make_event(true), b = cuda::make_event(true);
  fn();
  fn();
  std::vector<float> ms;
  for (int r = 0; r < std::max(1, reps); ++r) {
    CUDA_CHECK(cudaEventRecord(a.get(), s));
    fn();
    CUDA_CHECK(cudaEventRecord(b.get(), s));
    CUDA_CHECK(cudaEventSynchronize(b.get()));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a.get(), b.get()));
    ms.push_back(t);
  }
  std::nth_element(ms.begin(), ms.begin() + std::ptrdiff_t(ms.size() / 2), ms.end());
  return 1000.0 * ms[ms.size() / 2];
}

// The lab's parts, each for one batch, in the order cuda_lab runs them: the kernels alone
// first, then the library calls (each convolution pass with the algorithm the engine's rule
// picks from the lab's own measurement of the candidates: no engine needed), then whole
// training steps through the engine (warm-up, graphs, NCCL), the part most likely to throw.
std::vector<Result> run_own_kernels(const CudnnStages& s, const LabOptions& o, cudaStream_t stream);
std::vector<Result> run_fused_kernels(const CudnnStages& s, const LabOptions& o, cudaStream_t stream);
std::vector<Result> run_library_calls(const CudnnStages& s, const LabOptions& o, Precision precision,
                                      cudaStream_t stream);
std::vector<Result> run_steps(const CudnnStages& s, const LabOptions& o);

}  // namespace mb::lab

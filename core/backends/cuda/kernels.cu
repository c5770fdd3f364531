// The CUDA backend's own kernels: batch gather + normalise, bias/ReLU forward and backward,
// softmax cross-entropy with on-device metrics, fused Adam, and the in-GPU buffer sum.
// Reductions use one block per output and a fixed tree, so results are run-to-run identical.
#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"

namespace mb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;  // grid-stride loops beyond this; plenty for 132 SMs

int blocks_for(std::size_t work) {
  const std::size_t b = (work + kThreads - 1) / kThreads;
  return static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(b, kMaxBlocks)));
}

template <typename T>
__device__ T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Sum over the block; the result is valid in thread 0. blockDim.x must be a multiple of 32.
template <typename T>
__device__ T block_sum(T v) {
  __shared__ T partial[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = (threadIdx.x < warps) ? partial[threadIdx.x] : T(0);
  if (warp == 0) v = warp_sum(v);
  return v;
}

__global__ void gather_normalize_kernel(const uint8_t* __restrict__ pixels, const uint8_t* __restrict__ labels,
                                        const int32_t* __restrict__ idx, int n, int image_pixels,
                                        float* __restrict__ x, int32_t* __restrict__ labels_out) {
  const std::size_t total = std::size_t(n) * image_pixels;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t img = i / image_pixels, p = i - img * image_pixels;
    const std::size_t src = static_cast<std::size_t>(idx[img]);
    x[i] = static_cast<float>(pixels[src * image_pixels + p]) / 255.0f;
    if (p == 0) labels_out[img] = labels[src];
  }
}

__global__ void bias_activation_kernel(float* __restrict__ y, const float* __restrict__ bias, int c, int hw,
                                       std::size_t total, bool relu) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const int ch = static_cast<int>((i / hw) % c);
    const float v = y[i] + bias[ch];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

// grid.x = channels. Threads walk (image, position) pairs of their channel.
__global__ void relu_bias_backward_kernel(float* __restrict__ dy, const float* __restrict__ y, int n, int c, int hw,
                                          float* __restrict__ dbias) {
  const int ch = blockIdx.x;
  const std::size_t per_channel = std::size_t(n) * hw;
  float acc = 0.0f;
  for (std::size_t i = threadIdx.x; i < per_channel; i += blockDim.x) {
    const std::size_t img = i / hw, p = i - img * hw;
    const std::size_t at = (img * c + ch) * hw + p;
    float g = dy[at];
    if (y != nullptr && !(y[at] > 0.0f)) {
      g = 0.0f;
      dy[at] = 0.0f;
    }
    acc += g;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) dbias[ch] = acc;
}

// One block: the batch is at most a few thousand samples of 10 classes.
__global__ void softmax_xent_kernel(const float* __restrict__ logits, const int32_t* __restrict__ labels, int n,
                                    int classes, const float* __restrict__ grad_scale, float* __restrict__ dlogits,
                                    double* __restrict__ stats, bool accumulate) {
  const float scale = dlogits != nullptr ? *grad_scale : 0.0f;
  double loss = 0.0, correct = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float* l = logits + std::size_t(i) * classes;
    float mx = l[0];
    int arg = 0;
    for (int j = 1; j < classes; ++j) {
      if (l[j] > mx) mx = l[j], arg = j;  // first maximum wins, as in the reference
    }
    float sum = 0.0f;
    for (int j = 0; j < classes; ++j) sum += expf(l[j] - mx);
    const int y = labels[i];
    loss += static_cast<double>(mx + logf(sum) - l[y]);
    correct += (arg == y) ? 1.0 : 0.0;
    if (dlogits != nullptr) {
      float* d = dlogits + std::size_t(i) * classes;
      for (int j = 0; j < classes; ++j) d[j] = (expf(l[j] - mx) / sum - (j == y ? 1.0f : 0.0f)) * scale;
    }
  }
  loss = block_sum(loss);
  correct = block_sum(correct);
  if (threadIdx.x == 0) {
    if (accumulate) {
      stats[0] += loss;
      stats[1] += correct;
    } else {
      stats[0] = loss;
      stats[1] = correct;
    }
  }
}

// Same operations in the same order as adam_update_reference.
__global__ void adam_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ m,
                            float* __restrict__ v, std::size_t count, const StepScalars* __restrict__ s) {
  const float lr_t = s->lr_t, b1 = s->beta1, b2 = s->beta2, eps = s->epsilon;
  const float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = b1 * m[i] + one_minus_b1 * gi;
    const float vi = b2 * v[i] + one_minus_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr_t * mi / (sqrtf(vi) + eps);
  }
}

__global__ void sum_buffers_kernel(BufferSet buffers, int ranks, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float s = buffers.ptr[0][i];
    for (int r = 1; r < ranks; ++r) s += buffers.ptr[r][i];
    for (int r = 0; r < ranks; ++r) buffers.ptr[r][i] = s;
  }
}

}  // namespace

void launch_gather_normalize(const uint8_t* pixels, const uint8_t* labels, const int32_t* idx, int n,
                             int image_pixels, float* x, int32_t* labels_out, cudaStream_t stream) {
  if (n <= 0) return;
  gather_normalize_kernel<<<blocks_for(std::size_t(n) * image_pixels), kThreads, 0, stream>>>(
      pixels, labels, idx, n, image_pixels, x, labels_out);
  CUDA_CHECK_LAUNCH();
}

void launch_bias_activation(float* y, const float* bias, int n, int c, int hw, bool relu, cudaStream_t stream) {
  const std::size_t total = std::size_t(n) * c * hw;
  if (total == 0) return;
  bias_activation_kernel<<<blocks_for(total), kThreads, 0, stream>>>(y, bias, c, hw, total, relu);
  CUDA_CHECK_LAUNCH();
}

void launch_relu_bias_backward(float* dy, const float* y, int n, int c, int hw, float* dbias, cudaStream_t stream) {
  if (c <= 0) return;
  relu_bias_backward_kernel<<<c, 512, 0, stream>>>(dy, y, n, c, hw, dbias);
  CUDA_CHECK_LAUNCH();
}

void launch_softmax_xent(const float* logits, const int32_t* labels, int n, int classes, const float* grad_scale,
                         float* dlogits, double* stats, bool accumulate, cudaStream_t stream) {
  softmax_xent_kernel<<<1, kThreads, 0, stream>>>(logits, labels, n, classes, grad_scale, dlogits, stats, accumulate);
  CUDA_CHECK_LAUNCH();
}

void launch_adam(float* w, const float* g, float* m, float* v, std::size_t count, const StepScalars* scalars,
                 cudaStream_t stream) {
  if (count == 0) return;
  adam_kernel<<<blocks_for(count), kThreads, 0, stream>>>(w, g, m, v, count, scalars);
  CUDA_CHECK_LAUNCH();
}

void launch_sum_buffers(const BufferSet& buffers, int ranks, std::size_t count, cudaStream_t stream) {
  if (count == 0 || ranks <= 1) return;
  sum_buffers_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buffers, ranks, count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mb::cuda

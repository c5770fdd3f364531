// The CUDA backend's own kernels: batch gather + normalise, bias/ReLU forward and backward,
// 2x2 max pooling with the reference's tie rule, softmax cross-entropy with on-device
// metrics, fused Adam, and the in-GPU buffer sum.
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

// grid.x = channels. Threads walk (image, position) pairs of their channel. The sum is kept
// in double (as the reference does): conv1's bias gradient adds n x 676 terms.
__global__ void relu_bias_backward_kernel(float* __restrict__ dy, const float* __restrict__ y, int n, int c, int hw,
                                          float* __restrict__ dbias) {
  const int ch = blockIdx.x;
  const std::size_t per_channel = std::size_t(n) * hw;
  double acc = 0.0;
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
  if (threadIdx.x == 0) dbias[ch] = static_cast<float>(acc);
}

// One block: the batch is at most a few thousand samples of 10 classes. Computed in double
// exactly as ref::softmax_xent_forward/backward do (log-sum-exp around the first maximum,
// (p - onehot) * scale rounded once to float), so the metrics and d(logits) match the
// reference to double rounding, not float rounding.
__global__ void softmax_xent_kernel(const float* __restrict__ logits, const int32_t* __restrict__ labels, int n,
                                    int classes, const float* __restrict__ grad_scale, float* __restrict__ dlogits,
                                    double* __restrict__ stats, bool accumulate) {
  const double scale = dlogits != nullptr ? static_cast<double>(*grad_scale) : 0.0;
  double loss = 0.0, correct = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float* l = logits + std::size_t(i) * classes;
    int arg = 0;
    for (int j = 1; j < classes; ++j) {
      if (l[j] > l[arg]) arg = j;  // strict '>': the first maximum wins, as in the reference
    }
    const double zmax = l[arg];
    double sum = 0.0;
    for (int j = 0; j < classes; ++j) sum += exp(static_cast<double>(l[j]) - zmax);
    const double lse = zmax + log(sum);
    const int y = labels[i];
    loss += lse - static_cast<double>(l[y]);
    correct += (arg == y) ? 1.0 : 0.0;
    if (dlogits != nullptr) {
      float* d = dlogits + std::size_t(i) * classes;
      for (int j = 0; j < classes; ++j)
        d[j] = static_cast<float>((exp(static_cast<double>(l[j]) - lse) - (j == y ? 1.0 : 0.0)) * scale);
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

// Offset within the plane of the maximum of the 2x2 window (oy, ox): strict '>' in row-major
// scan order keeps the FIRST maximum, the rule of ref::maxpool2x2_backward (and PyTorch's).
// cuDNN documents no tie rule, and ties are common: after conv1 + ReLU a blank (zero) image
// region is the same value (the bias) everywhere.
__device__ __forceinline__ int window_argmax(const float* __restrict__ plane, int w, int oy, int ox) {
  int best = (2 * oy) * w + 2 * ox;
  const int at[3] = {best + 1, best + w, best + w + 1};
  for (int k = 0; k < 3; ++k) {
    if (plane[at[k]] > plane[best]) best = at[k];
  }
  return best;
}

// y [planes, h/2, w/2] from x [planes, h, w]; floor: an odd last row/column is dropped.
__global__ void maxpool2x2_forward_kernel(const float* __restrict__ x, float* __restrict__ y, std::size_t planes,
                                          int h, int w) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t out_plane = std::size_t(oh) * ow, total = planes * out_plane;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t p = i / out_plane;
    const int o = static_cast<int>(i - p * out_plane), oy = o / ow, ox = o - oy * ow;
    const float* plane = x + p * std::size_t(h) * w;
    y[i] = plane[window_argmax(plane, w, oy, ox)];
  }
}

// One thread per INPUT element, so every dx is written (no memset, no atomics, no races):
// dy goes to the window's first maximum, every other element (including the row/column that
// floor pooling drops) gets 0.
__global__ void maxpool2x2_backward_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                           float* __restrict__ dx, std::size_t planes, int h, int w) {
  const int oh = h / 2, ow = w / 2;
  const std::size_t in_plane = std::size_t(h) * w, total = planes * in_plane;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t p = i / in_plane;
    const int at = static_cast<int>(i - p * in_plane), iy = at / w, ix = at - iy * w;
    const int oy = iy / 2, ox = ix / 2;
    float g = 0.0f;
    if (oy < oh && ox < ow && window_argmax(x + p * in_plane, w, oy, ox) == at)
      g = dy[p * std::size_t(oh) * ow + std::size_t(oy) * ow + ox];
    dx[i] = g;
  }
}

// Same operations in the same order as adam_update_reference, each rounded on its own: the
// _rn intrinsics stop nvcc from contracting a*b + c into one FMA (its default), which the
// host reference (x86-64 baseline, no FMA) never does. Same inputs, same bits.
__global__ void adam_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ m,
                            float* __restrict__ v, std::size_t count, const StepScalars* __restrict__ s) {
  const float lr_t = s->lr_t, b1 = s->beta1, b2 = s->beta2, eps = s->epsilon;
  const float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(one_minus_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(one_minus_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    w[i] = __fsub_rn(w[i], __fdiv_rn(__fmul_rn(lr_t, mi), __fadd_rn(__fsqrt_rn(vi), eps)));
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

void launch_maxpool2x2_forward(const float* x, float* y, int n, int c, int h, int w, cudaStream_t stream) {
  const std::size_t planes = std::size_t(n) * c, total = planes * std::size_t(h / 2) * std::size_t(w / 2);
  if (total == 0) return;
  maxpool2x2_forward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, y, planes, h, w);
  CUDA_CHECK_LAUNCH();
}

void launch_maxpool2x2_backward(const float* x, const float* dy, float* dx, int n, int c, int h, int w,
                                cudaStream_t stream) {
  const std::size_t planes = std::size_t(n) * c, total = planes * std::size_t(h) * std::size_t(w);
  if (total == 0) return;
  maxpool2x2_backward_kernel<<<blocks_for(total), kThreads, 0, stream>>>(x, dy, dx, planes, h, w);
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

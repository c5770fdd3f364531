// The CUDA backend's own kernels: batch gather + normalise, the fused convolution epilogues
// (bias + ReLU + max pooling forward; pooling + ReLU mask + bias gradient backward), dense
// bias/ReLU, softmax cross-entropy with on-device metrics, fused Adam, the in-GPU buffer sum,
// and the stall kernel of fault injection.
// 32-bit indices throughout (the launchers check the sizes); the convolution epilogues are
// instantiated for the model's two shapes so that every division is by a constant.
#include <algorithm>
#include <climits>
#include <string>

#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/kernels.h"
#include "model/cnn_shape.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 8192;   // grid-stride beyond this; 132 SMs x 2048 threads need ~1056
constexpr int kSoftmaxThreads = 128;

int blocks_for(long long work, int threads = kThreads) {
  const long long b = (work + threads - 1) / threads;
  return static_cast<int>(std::max<long long>(1, std::min<long long>(b, kMaxBlocks)));
}

void check_size(long long elements, const char* what) {
  if (elements > INT_MAX)
    throw DeviceError(fmt::format("{}: {} elements exceed the kernels' 32-bit indexing", what, elements));
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

// True, in every thread, for the block that finishes last among `blocks`, which then sums
// the others' partials (written before the call) in index order: a deterministic grid-wide
// sum in one launch (the CUDA samples' threadFenceReduction). The last block resets the
// counter, so the next launch (a graph replay) finds it zero.
__device__ bool last_block_done(unsigned* counter, unsigned blocks) {
  __shared__ bool last;
  __threadfence();  // this block's partial is visible device-wide before it is counted
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(counter, 1u);
    last = before == blocks - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  return last;
}

// ---- gather ----

__global__ void gather_kernel(GatherArgs a) {
  constexpr int kPixels = cnn::kImagePixels;
  const int total = a.n * kPixels;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int img = i / kPixels, p = i - img * kPixels;
    const int src = a.idx[img];
    a.x[i] = static_cast<float>(a.pixels[static_cast<std::size_t>(src) * kPixels + p]) / 255.0f;
    if (p == 0) a.labels_out[img] = a.labels[src];
  }
}

dim3 gather_grid(const GatherArgs& a) { return dim3(blocks_for(static_cast<long long>(a.n) * cnn::kImagePixels)); }

// ---- softmax cross-entropy ----

// One sample per thread, computed in double exactly as ref::softmax_xent_forward/backward do
// (log-sum-exp around the first maximum, (p - onehot) * scale rounded once to float), so the
// metrics and d(logits) match the reference to double rounding, not float rounding.
__global__ void softmax_kernel(SoftmaxArgs a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  double loss = 0.0, correct = 0.0;
  if (i < a.n) {
    const float* l = a.logits + i * a.classes;
    constexpr int kMaxClasses = 16;
    float z[kMaxClasses];
    int arg = 0;
    for (int j = 0; j < a.classes; ++j) {
      z[j] = l[j] + a.bias[j];
      if (z[j] > z[arg]) arg = j;  // strict '>': the first maximum wins, as in the reference
    }
    const double zmax = z[arg];
    double sum = 0.0;
    for (int j = 0; j < a.classes; ++j) sum += exp(static_cast<double>(z[j]) - zmax);
    const double lse = zmax + log(sum);
    const int y = a.labels[i];
    loss = lse - static_cast<double>(z[y]);
    correct = (arg == y) ? 1.0 : 0.0;
    if (a.dlogits != nullptr) {
      const double scale = a.grad_scale;
      float* d = a.dlogits + i * a.classes;
      for (int j = 0; j < a.classes; ++j)
        d[j] = static_cast<float>((exp(static_cast<double>(z[j]) - lse) - (j == y ? 1.0 : 0.0)) * scale);
    }
  }
  loss = block_sum(loss);
  correct = block_sum(correct);
  if (threadIdx.x == 0) {
    a.partials[2 * blockIdx.x] = loss;
    a.partials[2 * blockIdx.x + 1] = correct;
  }
  if (last_block_done(a.counter, gridDim.x) && threadIdx.x == 0) {
    const volatile double* part = a.partials;
    double l = 0.0, c = 0.0;
    for (unsigned b = 0; b < gridDim.x; ++b) l += part[2 * b], c += part[2 * b + 1];
    a.stats[0] += l;
    a.stats[1] += c;
  }
}

dim3 softmax_grid(const SoftmaxArgs& a) { return dim3((std::max(1, a.n) + kSoftmaxThreads - 1) / kSoftmaxThreads); }

// ---- Adam ----

// Same operations in the same order as adam_update_reference, each rounded on its own: the
// _rn intrinsics stop nvcc from contracting a*b + c into one FMA (its default), which the
// host reference (x86-64 baseline, no FMA) never does. Same inputs, same bits.
__global__ void adam_kernel(AdamArgs a) {
  const float lr_t = a.lr_t, b1 = a.beta1, b2 = a.beta2, eps = a.epsilon;
  const float one_minus_b1 = 1.0f - b1, one_minus_b2 = 1.0f - b2;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.count; i += gridDim.x * blockDim.x) {
    const float gi = a.g[i];
    const float mi = __fadd_rn(__fmul_rn(b1, a.m[i]), __fmul_rn(one_minus_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(b2, a.v[i]), __fmul_rn(__fmul_rn(one_minus_b2, gi), gi));
    a.m[i] = mi;
    a.v[i] = vi;
    a.w[i] = __fsub_rn(a.w[i], __fdiv_rn(__fmul_rn(lr_t, mi), __fadd_rn(__fsqrt_rn(vi), eps)));
  }
}

dim3 adam_grid(const AdamArgs& a) { return dim3(blocks_for(a.count)); }

// ---- convolution epilogues ----

template <int C, int H, int W>
__global__ void bias_relu_pool_kernel(const float* __restrict__ y, const float* __restrict__ bias,
                                      float* __restrict__ p, uint8_t* __restrict__ arg, int total) {
  constexpr int OH = H / 2, OW = W / 2, OPLANE = OH * OW;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const int plane = i / OPLANE, o = i - plane * OPLANE, oy = o / OW, ox = o - oy * OW;
    const float b = bias[plane % C];
    const float* in = y + plane * (H * W) + (2 * oy) * W + 2 * ox;
    // relu(v) = max(0, v), the window scanned row-major with strict '>' (first maximum).
    const float v[4] = {fmaxf(in[0] + b, 0.0f), fmaxf(in[1] + b, 0.0f), fmaxf(in[W] + b, 0.0f),
                        fmaxf(in[W + 1] + b, 0.0f)};
    int k = 0;
    for (int j = 1; j < 4; ++j)
      if (v[j] > v[k]) k = j;
    p[i] = v[k];
    arg[i] = static_cast<uint8_t>(k);
  }
}

// Images per block of the bias gradient: about 2048 elements per block.
int images_per_block(int h, int w) { return std::max(1, 2048 / (h * w)); }

template <int C, int H, int W>
__global__ void pool_relu_bias_backward_kernel(const float* __restrict__ dp, const float* __restrict__ p,
                                               const uint8_t* __restrict__ arg, float* __restrict__ dy,
                                               float* __restrict__ dbias, double* partials, unsigned* counter,
                                               int n, int ipb) {
  constexpr int OH = H / 2, OW = W / 2, PLANE = H * W, OPLANE = OH * OW;
  const int ch = blockIdx.x, group = blockIdx.y;
  const int img0 = group * ipb, imgs = min(ipb, n - img0);
  double acc = 0.0;
  for (int e = threadIdx.x; e < imgs * PLANE; e += blockDim.x) {
    const int li = e / PLANE, pos = e - li * PLANE, iy = pos / W, ix = pos - iy * W;
    const int plane = (img0 + li) * C + ch;
    const int oy = iy >> 1, ox = ix >> 1;
    float g = 0.0f;
    if (oy < OH && ox < OW) {
      const int o = plane * OPLANE + oy * OW + ox;
      if (arg[o] == (((iy & 1) << 1) | (ix & 1)) && p[o] > 0.0f) g = dp[o];
    }
    dy[plane * PLANE + pos] = g;
    acc += g;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[ch * gridDim.y + group] = acc;
  if (last_block_done(counter, gridDim.x * gridDim.y)) {
    const volatile double* part = partials;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
      double s = 0.0;
      for (unsigned g = 0; g < gridDim.y; ++g) s += part[c * gridDim.y + g];
      dbias[c] = static_cast<float>(s);
    }
  }
}

// The model's two convolution shapes; anything else is a programming error.
template <typename F1, typename F2>
void dispatch_conv_shape(int c, int h, int w, F1&& conv1, F2&& conv2) {
  using namespace cnn;
  if (c == kConv1Out && h == kConv1Side && w == kConv1Side) return conv1();
  if (c == kConv2Out && h == kConv2Side && w == kConv2Side) return conv2();
  throw DeviceError(fmt::format("no convolution epilogue kernel for {}x{}x{}", c, h, w));
}

// ---- dense ----

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, int c, int total) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
    y[i] = fmaxf(y[i] + bias[i % c], 0.0f);
}

// grid.x = channels; threads walk the samples. The sum is kept in double, as the reference does.
__global__ void dense_bias_backward_kernel(float* __restrict__ dy, const float* __restrict__ y, int n, int c,
                                           float* __restrict__ dbias) {
  const int ch = blockIdx.x;
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int at = i * c + ch;
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

// ---- fault injection ----

__device__ unsigned long long global_timer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void stall_kernel(const volatile int* release, unsigned long long cap_ns) {
  const unsigned long long start = global_timer_ns();
  while (*release == 0 && global_timer_ns() - start < cap_ns) __nanosleep(1000);
}

// ---- in-GPU all-reduce ----

__global__ void sum_buffers_kernel(BufferSet buffers, int ranks, int count) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x) {
    float s = buffers.ptr[0][i];
    for (int r = 1; r < ranks; ++r) s += buffers.ptr[r][i];
    for (int r = 0; r < ranks; ++r) buffers.ptr[r][i] = s;
  }
}

}  // namespace

void launch_gather_normalize(const GatherArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  check_size(static_cast<long long>(a.n) * cnn::kImagePixels, "gather");
  gather_kernel<<<gather_grid(a), kThreads, 0, stream>>>(a);
  CUDA_CHECK_LAUNCH();
}

int softmax_partials(int n) { return 2 * ((std::max(1, n) + kSoftmaxThreads - 1) / kSoftmaxThreads); }

void launch_softmax_xent(const SoftmaxArgs& a, cudaStream_t stream) {
  if (a.n <= 0) return;
  if (a.classes < 1 || a.classes > 16) throw DeviceError(fmt::format("softmax: {} classes (1..16)", a.classes));
  check_size(static_cast<long long>(a.n) * a.classes, "softmax");
  softmax_kernel<<<softmax_grid(a), kSoftmaxThreads, 0, stream>>>(a);
  CUDA_CHECK_LAUNCH();
}

void launch_adam(const AdamArgs& a, cudaStream_t stream) {
  if (a.count <= 0) return;
  adam_kernel<<<adam_grid(a), kThreads, 0, stream>>>(a);
  CUDA_CHECK_LAUNCH();
}

void launch_bias_relu_pool(const float* y, const float* bias, float* p, uint8_t* arg, int n, int c, int h, int w,
                           cudaStream_t stream) {
  if (n <= 0) return;
  check_size(static_cast<long long>(n) * c * h * w, "bias+relu+pool");
  const int total = n * c * (h / 2) * (w / 2);
  auto run = [&](auto kernel) {
    kernel<<<blocks_for(total), kThreads, 0, stream>>>(y, bias, p, arg, total);
    CUDA_CHECK_LAUNCH();
  };
  using namespace cnn;
  dispatch_conv_shape(
      c, h, w, [&] { run(bias_relu_pool_kernel<kConv1Out, kConv1Side, kConv1Side>); },
      [&] { run(bias_relu_pool_kernel<kConv2Out, kConv2Side, kConv2Side>); });
}

int bias_grad_partials(int n, int c, int h, int w) {
  const int ipb = images_per_block(h, w);
  return c * ((std::max(1, n) + ipb - 1) / ipb);
}

void launch_pool_relu_bias_backward(const float* dp, const float* p, const uint8_t* arg, float* dy, float* dbias,
                                    double* partials, unsigned* counter, int n, int c, int h, int w,
                                    cudaStream_t stream) {
  if (n <= 0) return;
  check_size(static_cast<long long>(n) * c * h * w, "pool+relu+bias backward");
  const int ipb = images_per_block(h, w);
  const dim3 grid(c, (n + ipb - 1) / ipb);
  auto run = [&](auto kernel) {
    kernel<<<grid, kThreads, 0, stream>>>(dp, p, arg, dy, dbias, partials, counter, n, ipb);
    CUDA_CHECK_LAUNCH();
  };
  using namespace cnn;
  dispatch_conv_shape(
      c, h, w, [&] { run(pool_relu_bias_backward_kernel<kConv1Out, kConv1Side, kConv1Side>); },
      [&] { run(pool_relu_bias_backward_kernel<kConv2Out, kConv2Side, kConv2Side>); });
}

void launch_bias_relu(float* y, const float* bias, int n, int c, cudaStream_t stream) {
  if (n <= 0 || c <= 0) return;
  check_size(static_cast<long long>(n) * c, "bias+relu");
  const int total = n * c;
  bias_relu_kernel<<<blocks_for(total), kThreads, 0, stream>>>(y, bias, c, total);
  CUDA_CHECK_LAUNCH();
}

void launch_dense_bias_backward(float* dy, const float* y, int n, int c, float* dbias, cudaStream_t stream) {
  if (c <= 0) return;
  check_size(static_cast<long long>(n) * c, "dense bias backward");
  dense_bias_backward_kernel<<<c, 128, 0, stream>>>(dy, y, n, c, dbias);
  CUDA_CHECK_LAUNCH();
}

void launch_sum_buffers(const BufferSet& buffers, int ranks, std::size_t count, cudaStream_t stream) {
  if (count == 0 || ranks <= 1) return;
  check_size(static_cast<long long>(count), "in-GPU all-reduce");
  sum_buffers_kernel<<<blocks_for(static_cast<long long>(count)), kThreads, 0, stream>>>(buffers, ranks,
                                                                                         static_cast<int>(count));
  CUDA_CHECK_LAUNCH();
}

void launch_stall(const volatile int* release, double cap_s, cudaStream_t stream) {
  stall_kernel<<<1, 1, 0, stream>>>(release, static_cast<unsigned long long>(cap_s * 1e9));
  CUDA_CHECK_LAUNCH();
}

}  // namespace mb::cuda

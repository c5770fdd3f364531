// The fused path's CUDA kernels: thread-to-item mapping and block sums around the shared
// arithmetic of backends/fused/fused_math.h (see fused_kernels.h).
#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/fused_kernels.h"
#include "util/error.h"

namespace mb::cuda {
namespace {

using namespace mb::fused;

constexpr int kElementThreads = 256;
constexpr int kMaxBlocks = 8192;  // grid-stride beyond this

int element_blocks(int elements) {
  const int b = (elements + kElementThreads - 1) / kElementThreads;
  return b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b);
}

template <typename K>
__device__ void element_items(const FusedArgs& a, int begin_block, int blocks) {
  const int count = K::elements(a);
  for (int e = (int(blockIdx.x) - begin_block) * blockDim.x + threadIdx.x; e < count; e += blocks * blockDim.x)
    K::run(a, e);
}

template <typename K>
__global__ void element_kernel(FusedArgs a) {
  element_items<K>(a, 0, int(gridDim.x));
}

// One tile per block: the threads split the tile's terms, each warp sums its lanes' partials
// with a fixed shuffle tree, then thread j adds the warps' sums of output j in warp order.
template <typename K, int kThreads>
__device__ void reduce_tile(const FusedArgs& a, int tile) {
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  constexpr int kWarps = kThreads / 32;
  __shared__ float partial[kWarps][K::kOut];
  float acc[K::kOut];
  for (int j = 0; j < K::kOut; ++j) acc[j] = 0.0f;
  const int terms = K::terms(a, tile);
  for (int t = threadIdx.x; t < terms; t += kThreads) K::accumulate(a, tile, t, acc);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int j = 0; j < K::kOut; ++j) {
    float v = acc[j];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) partial[warp][j] = v;
  }
  __syncthreads();
  for (int j = threadIdx.x; j < K::kOut; j += kThreads) {
    float s = 0.0f;
    for (int w = 0; w < kWarps; ++w) s += partial[w][j];
    K::finish(a, tile, j, s);
  }
  __syncthreads();  // partial[] is reused by the block's next tile
}

template <typename K, int kThreads>
__global__ void __launch_bounds__(kThreads) reduce_kernel(FusedArgs a) {
  const int tiles = K::tiles(a);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) reduce_tile<K, kThreads>(a, tile);
}

// True, in every thread, for the block that finishes last (the CUDA samples'
// threadFenceReduction); it resets the counter for the next launch (a graph replay).
__device__ bool last_block(unsigned* counter) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == gridDim.x - 1;
    if (last) *counter = 0;
  }
  __syncthreads();
  return last;
}

__global__ void head_kernel(FusedArgs a) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < a.n) Head::run(a, i);
  if (last_block(a.counter) && threadIdx.x == 0) {
    // Head::add_stats's sum in sample order (deterministic), read past this SM's L1: the
    // other blocks wrote the values.
    const volatile double* ss = a.sample_stats;
    double l = 0.0, c = 0.0;
    for (int j = 0; j < a.n; ++j) l += ss[2 * j], c += ss[2 * j + 1];
    a.stats[0] += l;
    a.stats[1] += c;
  }
}

// fc1's and fc2's weight gradients (reduction tiles) and g2 (elements) in one launch: the
// first blocks take Fc1Wgrad's tiles, the next Fc2Wgrad's, the rest Fc1Dgrad's items.
constexpr int kDenseThreads = 128;
constexpr int kDenseItemBlocks = 512;

__global__ void __launch_bounds__(kDenseThreads) dense_backward_kernel(FusedArgs a) {
  const int t1 = Fc1Wgrad::tiles(a), t2 = Fc2Wgrad::tiles(a);
  const int b = blockIdx.x;
  if (b < t1) return reduce_tile<Fc1Wgrad, kDenseThreads>(a, b);
  if (b < t1 + t2) return reduce_tile<Fc2Wgrad, kDenseThreads>(a, b - t1);
  element_items<Fc1Dgrad>(a, t1 + t2, int(gridDim.x) - t1 - t2);
}

constexpr int kFc1Threads = 128, kConv2WgradThreads = 128, kConv1WgradThreads = 512;

template <typename K, int kThreads>
void launch_reduce(const FusedArgs& a, cudaStream_t s) {
  const int tiles = K::tiles(a);
  const int blocks = tiles < kMaxBlocks ? tiles : kMaxBlocks;
  reduce_kernel<K, kThreads><<<blocks, kThreads, 0, s>>>(a);
}

template <typename K>
void launch_elements(const FusedArgs& a, cudaStream_t s) {
  element_kernel<K><<<element_blocks(K::elements(a)), kElementThreads, 0, s>>>(a);
}

void check_args(const FusedArgs& a) {
  // 32-bit indexing: the largest index is n x 32 x 169 (p1, g1).
  if (static_cast<long long>(a.n) * kC1 * kP1Plane > 0x7fffffffLL || a.hidden < 1 ||
      static_cast<long long>(a.hidden) * kFlat > 0x7fffffffLL)
    throw DeviceError(fmt::format("fused kernels: batch {} / dense width {} exceed 32-bit indexing", a.n, a.hidden));
}

}  // namespace

void launch_fused(FusedKernel k, const FusedArgs& a, cudaStream_t s) {
  if (a.n <= 0) return;
  check_args(a);
  switch (k) {
    case FusedKernel::Conv1Fwd:
      launch_elements<Conv1Fwd>(a, s);
      break;
    case FusedKernel::Conv2Fwd:
      launch_elements<Conv2Fwd>(a, s);
      break;
    case FusedKernel::Fc1Fwd:
      launch_reduce<Fc1Fwd, kFc1Threads>(a, s);
      break;
    case FusedKernel::Head:
      head_kernel<<<(a.n + 127) / 128, 128, 0, s>>>(a);
      break;
    case FusedKernel::DenseBwd: {
      const int blocks = Fc1Wgrad::tiles(a) + Fc2Wgrad::tiles(a) + kDenseItemBlocks;
      dense_backward_kernel<<<blocks, kDenseThreads, 0, s>>>(a);
      break;
    }
    case FusedKernel::Conv2Wgrad:
      launch_reduce<Conv2Wgrad, kConv2WgradThreads>(a, s);
      break;
    case FusedKernel::Conv2Dgrad:
      launch_elements<Conv2Dgrad>(a, s);
      break;
    case FusedKernel::Conv1Wgrad:
      launch_reduce<Conv1Wgrad, kConv1WgradThreads>(a, s);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void launch_fused_forward(const FusedArgs& a, cudaStream_t s) {
  for (FusedKernel k : {FusedKernel::Conv1Fwd, FusedKernel::Conv2Fwd, FusedKernel::Fc1Fwd, FusedKernel::Head})
    launch_fused(k, a, s);
}

}  // namespace mb::cuda

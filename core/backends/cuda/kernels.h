// The CUDA backend's own kernels (everything cuDNN/cuBLAS do not cover), as host-side
// launchers so the engine itself compiles with the host compiler. All launches are
// asynchronous on `stream` and check the launch; none allocates or synchronises, so every
// one of them can be captured into a CUDA graph. Indexing is 32-bit (launchers refuse
// tensors beyond INT_MAX elements); reductions are deterministic: fixed partitions, a fixed
// tree inside a block, and the partial sums added in index order by the block that finishes
// last, so results are run-to-run identical.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace mb::cuda {

// ---- the three kernels whose arguments change from step to step ----
// They take one argument pack each, so a captured step graph is updated for the next step
// with set_node_args (step_capture.h: cudaGraphExecKernelNodeSetParams on the node the
// capture itself named) instead of any host-to-device copy.

// x[i, p] = pixels[idx[i] * 784 + p] / 255, labels_out[i] = labels[idx[i]].
struct GatherArgs {
  const uint8_t* pixels = nullptr;
  const uint8_t* labels = nullptr;
  const int32_t* idx = nullptr;   // per step: the step's indices (in the epoch order on the device)
  int n = 0;
  float* x = nullptr;
  int32_t* labels_out = nullptr;
};
void launch_gather_normalize(const GatherArgs& a, cudaStream_t stream);

// Softmax cross-entropy over logits [n, classes] + bias (the fc2 bias is added here, as the
// reference adds it before the softmax: one float add). ADDS the batch's loss sum and correct
// count to stats[0], stats[1] (doubles; callers zero them). When dlogits is given it receives
// (softmax - onehot) * grad_scale. Computed in double exactly as ref::softmax_xent_* do
// (log-sum-exp around the first maximum), argmax ties to the lowest class. One sample per
// thread; partials (2 doubles per block, softmax_partials(n)) and counter (zero, and left
// zero) are the deterministic cross-block sum's scratch.
struct SoftmaxArgs {
  const float* logits = nullptr;
  const float* bias = nullptr;
  const int32_t* labels = nullptr;
  int n = 0, classes = 0;
  float grad_scale = 1.0f;        // per step: 1 / global batch
  float* dlogits = nullptr;
  double* partials = nullptr;
  unsigned* counter = nullptr;
  double* stats = nullptr;
};
void launch_softmax_xent(const SoftmaxArgs& a, cudaStream_t stream);
int softmax_partials(int n);   // doubles of scratch for n samples

// Keras Adam (optim/adam.h) over flat buffers; every operation rounded as
// adam_update_reference rounds it (no FMA contraction).
struct AdamArgs {
  float* w = nullptr;
  const float* g = nullptr;
  float* m = nullptr;
  float* v = nullptr;
  int count = 0;
  float lr_t = 0;                 // per step: adam_step_size(cfg, step)
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
};
void launch_adam(const AdamArgs& a, cudaStream_t stream);

// ---- convolution epilogues (the conv layers' shapes of model/cnn_spec.h only) ----

// p = maxpool2x2(relu(y + bias[c])), floor (an odd last row/column is dropped), NCHW; arg
// gets the window position (0..3, row-major) of the FIRST maximum, the reference's tie rule
// (cuDNN documents none). One pass over the convolution's output instead of three.
void launch_bias_relu_pool(const float* y, const float* bias, float* p, uint8_t* arg, int n, int c, int h, int w,
                           cudaStream_t stream);

// Its backward: dy (ALL of it, n x c x h x w) = dp at each window's argmax where p > 0 (the
// ReLU mask: at the argmax the activation is the pooled value), 0 elsewhere and in the dropped
// row/column; dbias[c] = sum of dy over images and positions, in double, in two deterministic
// stages (blocks over channel x image group, then the last block sums the partials).
// partials: bias_grad_partials(n, c, h, w) doubles; counter: zero, and left zero.
void launch_pool_relu_bias_backward(const float* dp, const float* p, const uint8_t* arg, float* dy, float* dbias,
                                    double* partials, unsigned* counter, int n, int c, int h, int w,
                                    cudaStream_t stream);
int bias_grad_partials(int n, int c, int h, int w);

// ---- dense layers ----

// y[n, c] = max(0, y + bias[c]) (fc1).
void launch_bias_relu(float* y, const float* bias, int n, int c, cudaStream_t stream);

// dy <- dy * (y > 0) when y is given (y is the ReLU output), then dbias[c] = sum over n of dy
// (double). One block per channel, fixed order; a dense layer has few channels and samples.
void launch_dense_bias_backward(float* dy, const float* y, int n, int c, float* dbias, cudaStream_t stream);

// ---- in-GPU all-reduce ----
// Every buffer[r][i] <- sum over r (in rank order) of buffer[r][i].
inline constexpr int kMaxInGpuRanks = 64;
struct BufferSet {
  float* ptr[kMaxInGpuRanks];
};
void launch_sum_buffers(const BufferSet& buffers, int ranks, std::size_t count, cudaStream_t stream);

// ---- fault injection (--inject-fault, backends/common/cuda_options.h) ----
// Spins on the device until *release becomes nonzero (a host-mapped flag) or cap_s seconds
// have passed by the GPU's global timer: a stuck device on purpose, bounded.
void launch_stall(const volatile int* release, double cap_s, cudaStream_t stream);

}  // namespace mb::cuda

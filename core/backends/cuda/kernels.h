// The CUDA backend's own kernels (everything cuDNN/cuBLAS do not cover), as host-side
// launchers so the engine itself compiles with the host compiler. All launches are
// asynchronous on `stream` and check the launch; none allocates or synchronises, so every
// one of them can be captured into a CUDA graph.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace mb::cuda {

// Step-dependent scalars read by the kernels from device memory, so a captured graph can be
// replayed with new values: the host writes them (with the step's indices) before launch.
struct StepScalars {
  float grad_scale = 1.0f;   // folded into d(loss)/d(logits)
  float lr_t = 0.0f;         // adam_step_size(cfg, step)
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-7f;
  float pad[3] = {0, 0, 0};  // 32 bytes: the int32 indices that follow stay 16-byte aligned
};
static_assert(sizeof(StepScalars) == 32);

// x[i, p] = pixels[idx[i] * image_pixels + p] / 255, labels_out[i] = labels[idx[i]].
void launch_gather_normalize(const uint8_t* pixels, const uint8_t* labels, const int32_t* idx, int n,
                             int image_pixels, float* x, int32_t* labels_out, cudaStream_t stream);

// y[n, c, hw] += bias[c], then max(0, .) when relu. NCHW; a dense layer is hw = 1.
void launch_bias_activation(float* y, const float* bias, int n, int c, int hw, bool relu, cudaStream_t stream);

// The backward of bias (+ ReLU): dy <- dy * (y > 0) when y is given (y is the ReLU output),
// then dbias[c] = sum over n, hw of dy (in double). One block per channel, fixed order.
void launch_relu_bias_backward(float* dy, const float* y, int n, int c, int hw, float* dbias, cudaStream_t stream);

// 2x2 max pooling, stride 2, floor, NCHW (own kernels rather than cuDNN's: the backward must
// route each gradient to the FIRST maximum of its window, as the reference does, and cuDNN
// documents no tie rule). Forward: y [n, c, h/2, w/2]. Backward recomputes the argmax from the
// forward input x and writes ALL of dx [n, c, h, w] (zeros off the argmax and in the dropped
// odd row/column).
void launch_maxpool2x2_forward(const float* x, float* y, int n, int c, int h, int w, cudaStream_t stream);
void launch_maxpool2x2_backward(const float* x, const float* dy, float* dx, int n, int c, int h, int w,
                                cudaStream_t stream);

// Softmax cross-entropy over logits [n, classes]. Adds (accumulate) or writes the batch's
// loss sum and correct count to stats[0], stats[1] (doubles, one block, fixed order).
// When dlogits is given it receives (softmax - onehot) * (*grad_scale). Computed in double,
// argmax ties to the lowest class, as the reference does.
void launch_softmax_xent(const float* logits, const int32_t* labels, int n, int classes, const float* grad_scale,
                         float* dlogits, double* stats, bool accumulate, cudaStream_t stream);

// Keras Adam (optim/adam.h) over flat buffers, scalars read from device memory; every
// operation rounded as adam_update_reference rounds it (no FMA contraction).
void launch_adam(float* w, const float* g, float* m, float* v, std::size_t count, const StepScalars* scalars,
                 cudaStream_t stream);

// In-GPU all-reduce: every buffer[r][i] <- sum over r (in rank order) of buffer[r][i].
inline constexpr int kMaxInGpuRanks = 64;
struct BufferSet {
  float* ptr[kMaxInGpuRanks];
};
void launch_sum_buffers(const BufferSet& buffers, int ranks, std::size_t count, cudaStream_t stream);

}  // namespace mb::cuda

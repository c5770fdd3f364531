// The model's conv2 (32 -> 64 channels, 3x3 valid, 13x13 -> 11x11) by Winograd F(4x4, 3x3),
// forward (+ bias + ReLU), data gradient and weight gradient, in Highway for every
// instruction set. oneDNN 2.6 has Winograd only for AVX-512 (and there not for the data
// gradient); its direct kernels spend 2.2 million multiply-adds per image and pass where
// these spend 0.66 million in each of the three.
//
// Each pass: transform 6x6 tiles, one small GEMM per transform point (36 of them, over the
// 32 or 64 channels), transform back. Images go in chunks whose buffers stay in the L2
// cache; chunks are split across the OpenMP threads (parallel.h).
#pragma once
#include <cstdint>
#include <vector>

namespace mb::onednn {

// Activations are channel-blocked by 16 (nChw16c, see blocked_pool.h).
inline constexpr int kWinogradBlock = 16;

// Transformed weights U = G g G^T of every channel pair; refresh after every weight update.
struct WinogradConv2Weights {
  std::vector<float> forward;      // [36 points][32 in][64 out] (+ padding after each point)
  std::vector<float> transposed;   // [36 points][64 out][32 in] (+ padding), for the input gradient
};

// oihw: conv2 weights [64][32][3][3]. Fills `forward` (for the forward pass) and/or
// `transposed` (for the input gradient).
void winograd_conv2_set_weights(const float* oihw, WinogradConv2Weights& w, bool forward = true,
                                bool backward = true);

// x: n x 32 x 13 x 13. y = relu(conv2(x) + bias): n x 64 x 11 x 11, written unless null.
// pooled and arg (unless null): pool2 fused in, as max_pool_forward({n, 64, 11, 5, 16, 1})
// would compute it from y: the 2x2 max-pool (floor) as plain n x 64 x 5 x 5 (= the n x 1600
// flatten) and its argmax bytes; then y need not exist at all.
void winograd_conv2_forward(const WinogradConv2Weights& w, int n, const float* x, const float* bias, float* y,
                            float* pooled = nullptr, uint8_t* arg = nullptr);

// The gradient at conv2's output, its ReLU derivative applied: either dy (n x 64 x 11 x 11),
// or (dy null) pool2's side, from which the fused pool2 backward rebuilds it as
// max_pool_backward_relu would: pooled output and its gradient (plain n x 1600) and argmax.
struct Conv2OutputGrad {
  const float* dy = nullptr;
  const float* pooled = nullptr;
  const float* d_pooled = nullptr;
  const uint8_t* arg = nullptr;
};

// dx (skipped when null): the input gradient, n x 32 x 13 x 13, overwritten. dw and db
// (skipped when dw is null): the weight gradient [64][32][3][3] (OIHW) and the bias gradient
// [64], summed over the batch, overwritten. Both gradients share one transform of dy.
void winograd_conv2_backward(const WinogradConv2Weights& w, int n, const float* x, const Conv2OutputGrad& dy,
                             float* dx, float* dw, float* db);

}  // namespace mb::onednn

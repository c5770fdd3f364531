// The model's conv2 (32 -> 64 channels, 3x3 valid, 13x13 -> 11x11) by Winograd F(4x4, 3x3),
// forward (+ bias + ReLU), data gradient and weight gradient, in Highway for every
// instruction set. oneDNN 2.6 has Winograd only for AVX-512, and its direct kernels spend 2.2
// million multiply-adds per image and pass where F(4x4, 3x3) needs 0.66 million (forward,
// weight gradient) or 1.2 million (data gradient, whose 13x13 output tiles less evenly):
// on AVX2 this is the difference between ~0.4 and ~0.2 of PyTorch's epoch time.
//
// Each pass: transform 6x6 input tiles (B^T d B), one small GEMM per transform point (36 of
// them, over the 32 or 64 channels), transform back (A^T m A). Images go in chunks whose
// buffers stay in the L2 cache; chunks are split across the OpenMP threads (parallel.h).
#pragma once
#include <vector>

namespace mb::onednn {

// Activations are channel-blocked by 16 (nChw16c, see blocked_pool.h).
inline constexpr int kWinogradBlock = 16;

// Transformed weights U = G g G^T of every channel pair, for both directions; refresh after
// every weight update.
struct WinogradConv2Weights {
  std::vector<float> forward;    // [36 points][32 in][64 out]
  std::vector<float> backward;   // [36 points][64 out][32 in], of the kernel rotated by 180 degrees
};

// oihw: conv2 weights [64][32][3][3].
void winograd_conv2_set_weights(const float* oihw, WinogradConv2Weights& w);

// x: n x 32 x 13 x 13; y = relu(conv2(x) + bias): n x 64 x 11 x 11.
void winograd_conv2_forward(const WinogradConv2Weights& w, int n, const float* x, const float* bias, float* y);

// dy: the gradient at conv2's output (its ReLU derivative already applied), n x 64 x 11 x 11.
// dx: n x 32 x 13 x 13, overwritten.
void winograd_conv2_backward_data(const WinogradConv2Weights& w, int n, const float* dy, float* dx);

// Overwrites dw ([64][32][3][3], OIHW) and db ([64]) with the gradients summed over the batch.
void winograd_conv2_backward_weights(int n, const float* x, const float* dy, float* dw, float* db);

}  // namespace mb::onednn

// The first block of the model fused into two loops: conv1 (1 -> 32 channels, 3x3 valid) +
// bias + ReLU + 2x2 max-pool forward, and its weight/bias gradient straight from the pooled
// gradient. With one input channel conv1 is little arithmetic on a large output; fused, its
// 26x26x32 activation and gradient never reach memory: a training step at batch 64 went from
// ~7.3 to ~5.9 ms of CPU against oneDNN's conv1 (ReLU post-op) + pooling loops. No data
// gradient: nothing below conv1 learns. Written once with Highway (simd_target.h picks the
// instruction set at run time); each lane is one output channel, so every target sums in the
// same order and differs only by FMA rounding (none on SSE4 and below).
#pragma once
#include <cstdint>

namespace mb::onednn {

inline constexpr int kConv1Taps = 9;   // 3x3 kernel positions

// Conv1 weights as [tap][out channel] (tap = kh*3 + kw), so one tap's 32 channels are contiguous.
void conv1_weights_to_taps(const float* oihw, float* taps);
void conv1_taps_to_weights(const double* taps, float* oihw);

// images: n x 28 x 28 in [0,1]. pooled: n x 32 x 13 x 13 in the layout blocked by `block`
// (16 = nChw16c, 8 = nChw8c, 1 = nchw; see blocked_pool.h); arg: each window's argmax (0..3,
// first maximum on ties), n*32*169 bytes.
void conv1_relu_pool_forward(int n, const float* images, const float* taps, const float* bias, int block,
                             float* pooled, uint8_t* arg);

// d_pooled: the gradient at the pool output (same layout); the ReLU derivative is pooled > 0.
// Overwrites d_taps ([tap][channel], double accumulators) and d_bias (double).
void conv1_relu_pool_backward(int n, const float* images, const float* pooled, const float* d_pooled,
                              const uint8_t* arg, int block, double* d_taps, double* d_bias);

bool conv1_block_supported(int block);

}  // namespace mb::onednn

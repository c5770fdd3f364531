// 2x2 stride-2 max-pooling (floor, as Keras 'valid') over oneDNN's channel-blocked
// activations, with the ReLU derivative folded into the backward pass. Own Highway loops (one
// source for every instruction set, see simd_target.h): in oneDNN 2.6 the pooling primitives
// cost as much as a convolution on these small shapes. Selection only, no arithmetic, so
// every target gives bit-identical results.
#pragma once
#include <cstdint>

namespace mb::onednn {

// Layout "blocked by B": element (n, c, h, w) lives at (((n*C/B + c/B)*side + h)*side + w)*B + c%B,
// so B = 16 is nChw16c, B = 8 nChw8c, B = 1 plain nchw. C must be a multiple of B.
struct PoolShape {
  int batch = 0, channels = 0;
  int in_side = 0, out_side = 0;   // out_side = in_side / 2
  int in_block = 1, out_block = 1; // each 1, 8 or 16
};

bool pool_block_supported(int block);

// out = max over each 2x2 window; arg = which of the 4 (row-major) held it, first on ties.
void max_pool_forward(const PoolShape& s, const float* in, float* out, uint8_t* arg);

// d_in = the pooled gradient routed to each window's argmax, masked by out > 0: `out` is
// max-pooled ReLU output, so out > 0 is the ReLU derivative at the chosen element. Writes
// every element of d_in (zero off the argmax and in the rows/columns the floor drops).
void max_pool_backward_relu(const PoolShape& s, const float* d_out, const float* out, const uint8_t* arg,
                            float* d_in);

}  // namespace mb::onednn

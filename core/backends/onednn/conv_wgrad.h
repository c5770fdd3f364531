// The weight (and bias) gradient of a stride-1 convolution with few input channels, as an own
// Highway loop: oneDNN 2.7's kernels for it run far from the FMA peak (lenet5's first layer,
// one channel in, 5x5 same: 5 GFLOP/s, 40 % of its step on AVX2), because they vectorise over
// input channels. This one vectorises over the output channels of one block of the gradient,
// which oneDNN's forward leaves blocked, and keeps a row of taps in registers.
#pragma once

namespace mb::onednn {

struct ConvWgradShape {
  int batch = 0;
  int in_c = 0, in_h = 0, in_w = 0;    // x: plain N x IC x H x W
  int out_c = 0, out_h = 0, out_w = 0; // dy: N x OC x OH x OW, channels blocked by `block`
  int kernel = 0, pad = 0;             // K x K taps, stride 1, `pad` zeros on every side
  int block = 8;                       // 8 (nChw8c) or 16 (nChw16c)
};

// Where the loop applies: few input channels, a gradient blocked by 8 or 16, a shape that
// gives these outputs.
bool conv_wgrad_supported(const ConvWgradShape& s);

// dw = sum over images and positions of dy x the shifted input, OIHW (the flat buffer's
// layout); db (nullptr: no bias) = sum of dy per channel. Overwrites both. Each image's sums
// are formed first and then added in image order, so the result does not depend on the
// thread count (threads take output-channel blocks). With `relu_out` (the layer's output, in
// dy's layout) dy is read through the ReLU's derivative, relu_out > 0 ? dy : 0, the same bits
// as masking dy first.
void conv_weight_grad(const ConvWgradShape& s, const float* x, const float* dy, const float* relu_out, float* dw,
                      float* db);

}  // namespace mb::onednn

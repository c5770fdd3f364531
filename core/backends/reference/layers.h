// Plain-loop reference layers (NCHW float, batch n): the ground truth every fast backend
// (oneDNN, cuDNN, own CUDA) is compared with; reference/reference_net.h runs a model on them.
// Readability first; sums are accumulated in double so the reference is more exact than the
// backends it judges. Every backward OVERWRITES its outputs (never accumulates).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/replica_engine.h"

namespace mb::ref {

// ---- conv2d: stride 1, k x k kernel, `pad` zeros on every side (0: valid; (k-1)/2: same) ----
// x [n, c_in, h, w], weight [c_out, c_in, k, k] (OIHW), bias [c_out] (nullptr: none),
// y [n, c_out, out_h, out_w]. Cross-correlation, as PyTorch and Keras compute it.
struct ConvShape {
  int n = 0, c_in = 0, h = 0, w = 0, c_out = 0, k = 3, pad = 0;
  int out_h() const { return h + 2 * pad - k + 1; }
  int out_w() const { return w + 2 * pad - k + 1; }
};

void conv2d_forward(const ConvShape& s, const float* x, const float* weight, const float* bias, float* y);

// dy [n, c_out, out_h, out_w]. Writes dx (skipped when nullptr: the first layer needs none),
// dweight and dbias (skipped when nullptr: no bias), all overwritten.
void conv2d_backward(const ConvShape& s, const float* x, const float* weight, const float* dy, float* dx,
                     float* dweight, float* dbias);

// ---- ReLU ---------------------------------------------------------------------------------
// y = max(x, 0); y may alias x.
void relu_forward(const float* x, float* y, std::size_t count);

// Backward from the forward OUTPUT y (y > 0 exactly where x > 0, and the models keep y):
// dx = y > 0 ? dy : 0. The derivative at 0 is taken as 0, as in PyTorch and oneDNN. dx may alias dy.
void relu_backward(const float* y, const float* dy, float* dx, std::size_t count);

// ---- pooling 2x2, stride 2 ------------------------------------------------------------------
// valid: floor (an odd last row/column is dropped); same (TF): ceil, the last window of an odd
// side holds only the pixels inside (max over them; average over them, padding excluded).
// x [n, c, h, w], y [n, c, out_h, out_w].
struct PoolShape {
  int n = 0, c = 0, h = 0, w = 0;
  bool same = false;
  int out_h() const { return same ? (h + 1) / 2 : h / 2; }
  int out_w() const { return same ? (w + 1) / 2 : w / 2; }
};

void maxpool2x2_forward(const PoolShape& s, const float* x, float* y);

// Routes each dy to the argmax of its window, recomputed from the forward INPUT x; every
// other dx (including the dropped row/column) is 0. Ties: the FIRST maximum in row-major
// scan order of the window ((0,0), (0,1), (1,0), (1,1)) wins, which is what oneDNN does;
// after a ReLU all-zero windows are common, so the fast backends must match this rule.
void maxpool2x2_backward(const PoolShape& s, const float* x, const float* dy, float* dx);

void avgpool2x2_forward(const PoolShape& s, const float* x, float* y);
// dx = dy / (pixels in the window), over the window; dropped pixels get 0.
void avgpool2x2_backward(const PoolShape& s, const float* dy, float* dx);

// ---- global average pooling: [n, c, h, w] -> [n, c] ----------------------------------------
void global_avg_pool_forward(int n, int c, int hw, const float* x, float* y);
void global_avg_pool_backward(int n, int c, int hw, const float* dy, float* dx);

// ---- dense: y = x W^T + b (bias nullptr: none) ------------------------------------------
// x [n, in], weight [out, in] (PyTorch layout), bias [out], y [n, out].
struct DenseShape {
  int n = 0, in = 0, out = 0;
};

void dense_forward(const DenseShape& s, const float* x, const float* weight, const float* bias, float* y);

// dy [n, out]. Writes dx (skipped when nullptr), dweight [out, in], dbias [out] (skipped when
// nullptr), overwritten.
void dense_backward(const DenseShape& s, const float* x, const float* weight, const float* dy, float* dx,
                    float* dweight, float* dbias);

// ---- softmax + sparse categorical cross-entropy --------------------------------------------
// logits [n, classes], labels [n] (each < classes, else DataError).
// Returns the SUM over samples of -log softmax(logits)[label] (computed in double, via
// log-sum-exp) and the number of samples whose argmax equals the label; argmax ties go to
// the lowest class index (a model with equal logits predicts class 0).
BatchStats softmax_xent_forward(const float* logits, const uint8_t* labels, int n, int classes);

// dlogits = (softmax(logits) - onehot(label)) * scale, overwritten.
void softmax_xent_backward(const float* logits, const uint8_t* labels, int n, int classes, float scale,
                           float* dlogits);

}  // namespace mb::ref

namespace mb {

// uint8 pixels -> float in [0, 1] as p / 255.0f (a float division, correctly rounded): the one
// conversion every backend uses, so all of them see bit-identical inputs.
void normalize_pixels(const uint8_t* pixels, std::size_t count, float* out);

}  // namespace mb

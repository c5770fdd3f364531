// Plain-loop reference layers (NCHW float, batch n) and the whole reference model built from
// them: the ground truth every fast backend (oneDNN, cuDNN, own CUDA) is compared with.
// Readability first; sums are accumulated in double so the reference is more exact than the
// backends it judges. Every backward OVERWRITES its outputs (never accumulates).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/replica_engine.h"

namespace mb::ref {

// ---- conv2d: valid padding, stride 1, k x k kernel (3 in the model), with bias -----------
// x [n, c_in, h, w], weight [c_out, c_in, k, k] (OIHW), bias [c_out], y [n, c_out, h-k+1, w-k+1].
// Cross-correlation, as PyTorch and Keras compute it (the kernel is not flipped).
struct ConvShape {
  int n = 0, c_in = 0, h = 0, w = 0, c_out = 0, k = 3;
  int out_h() const { return h - k + 1; }
  int out_w() const { return w - k + 1; }
};

void conv2d_forward(const ConvShape& s, const float* x, const float* weight, const float* bias, float* y);

// dy [n, c_out, out_h, out_w]. Writes dx (skipped when nullptr: the first layer needs none),
// dweight and dbias, all overwritten.
void conv2d_backward(const ConvShape& s, const float* x, const float* weight, const float* dy, float* dx,
                     float* dweight, float* dbias);

// ---- ReLU ---------------------------------------------------------------------------------
// y = max(x, 0); y may alias x.
void relu_forward(const float* x, float* y, std::size_t count);

// Backward from the forward OUTPUT y (y > 0 exactly where x > 0, and the models keep y):
// dx = y > 0 ? dy : 0. The derivative at 0 is taken as 0, as in PyTorch and oneDNN. dx may alias dy.
void relu_backward(const float* y, const float* dy, float* dx, std::size_t count);

// ---- max pooling 2x2, stride 2, floor (Keras 'valid': an odd last row/column is dropped) -----
// x [n, c, h, w], y [n, c, h/2, w/2].
struct PoolShape {
  int n = 0, c = 0, h = 0, w = 0;
  int out_h() const { return h / 2; }
  int out_w() const { return w / 2; }
};

void maxpool2x2_forward(const PoolShape& s, const float* x, float* y);

// Routes each dy to the argmax of its window, recomputed from the forward INPUT x; every
// other dx (including the dropped row/column) is 0. Ties: the FIRST maximum in row-major
// scan order of the window ((0,0), (0,1), (1,0), (1,1)) wins, which is what oneDNN does;
// after a ReLU all-zero windows are common, so the fast backends must match this rule.
void maxpool2x2_backward(const PoolShape& s, const float* x, const float* dy, float* dx);

// ---- dense: y = x W^T + b -----------------------------------------------------------------
// x [n, in], weight [out, in] (PyTorch layout), bias [out], y [n, out].
struct DenseShape {
  int n = 0, in = 0, out = 0;
};

void dense_forward(const DenseShape& s, const float* x, const float* weight, const float* bias, float* y);

// dy [n, out]. Writes dx (skipped when nullptr), dweight [out, in], dbias [out], overwritten.
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

// ---- the whole reference model (cnn_spec.h) ------------------------------------------------
// In namespace mb itself: these are what the other backends, the selftest and the tests call.
namespace mb {

// uint8 pixels -> float in [0, 1] as p / 255.0f (a float division, correctly rounded): the one
// conversion every backend uses, so all of them see bit-identical inputs.
void normalize_pixels(const uint8_t* pixels, std::size_t count, float* out);

// Activations and their gradients for a batch, grown on demand and reused between calls.
// Activations followed by a ReLU are stored after it (the ReLU runs in place).
struct ReferenceWorkspace {
  explicit ReferenceWorkspace(int dense_width = cnn::kReferenceHidden) : hidden(dense_width) {}
  int hidden;                               // the model's dense width (ModelSpec::hidden)
  int capacity = 0;                         // samples the buffers below hold
  std::vector<float> conv1, pool1;          // [n,32,26,26], [n,32,13,13]
  std::vector<float> conv2, pool2;          // [n,64,11,11], [n,64,5,5] (= flatten [n,1600])
  std::vector<float> fc1, logits;           // [n,hidden], [n,10]
  std::vector<float> d_conv1, d_pool1, d_conv2, d_pool2, d_fc1, d_logits;

  void reserve(int n);                      // makes room for n samples (never shrinks)
};

// Forward + backward over n images (n x 784 floats in [0, 1]) with their labels.
// params and grads are flat buffers of cnn::param_count(ws.hidden) floats in the cnn_spec.h layout;
// grads = d(sum of per-sample losses)/dθ * grad_scale, OVERWRITTEN (n == 0: all zeros,
// zero stats). Returns the batch's loss sum, correct count and sample count.
BatchStats reference_forward_backward(const float* params, const float* images, const uint8_t* labels, int n,
                                      float grad_scale, float* grads, ReferenceWorkspace& ws);

// Forward only: loss sum, correct count, sample count. Leaves the activations in ws.
BatchStats reference_forward(const float* params, const float* images, const uint8_t* labels, int n,
                             ReferenceWorkspace& ws);

// The same forward loops over double parameters and images (loss sum, correct, samples). For
// the finite-difference tests: differences of this carry no float rounding noise.
BatchStats reference_forward_double(const double* params, const double* images, const uint8_t* labels, int n,
                                    int hidden = cnn::kReferenceHidden);

}  // namespace mb

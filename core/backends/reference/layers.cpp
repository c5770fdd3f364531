// Plain-loop reference layers and the whole reference model: obvious loops, double sums.
// Loop orders keep the innermost loop contiguous where that costs no clarity, because the
// reference engine also trains (slowly) and the tests run it on whole batches.
#include "backends/reference/layers.h"

#include <algorithm>
#include <cmath>

#include "model/cnn_spec.h"
#include "util/error.h"

namespace mb::ref {

namespace {

inline std::size_t idx4(int a, int b, int c, int d, int nb, int nc, int nd) {
  return ((static_cast<std::size_t>(a) * nb + b) * nc + c) * nd + d;
}

// Forward passes are templates so the tests can run the identical loops in double
// (finite differences without float noise); the public API below them is float.

template <typename T>
void conv2d_forward_t(const ConvShape& s, const T* x, const T* weight, const T* bias, T* y) {
  const int oh = s.out_h(), ow = s.out_w(), k = s.k;
  for (int n = 0; n < s.n; ++n)
    for (int co = 0; co < s.c_out; ++co)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          double acc = bias[co];
          for (int ci = 0; ci < s.c_in; ++ci)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx)
                acc += static_cast<double>(x[idx4(n, ci, oy + ky, ox + kx, s.c_in, s.h, s.w)]) *
                       weight[idx4(co, ci, ky, kx, s.c_in, k, k)];
          y[idx4(n, co, oy, ox, s.c_out, oh, ow)] = static_cast<T>(acc);
        }
}

template <typename T>
void relu_forward_t(const T* x, T* y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

// Offset (within the plane) of the window's maximum; strict '>' keeps the first in scan order.
template <typename T>
std::size_t window_argmax(const T* plane, int w, int oy, int ox) {
  std::size_t best = static_cast<std::size_t>(2 * oy) * w + 2 * ox;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const std::size_t at = static_cast<std::size_t>(2 * oy + dy) * w + (2 * ox + dx);
      if (plane[at] > plane[best]) best = at;
    }
  return best;
}

template <typename T>
void maxpool2x2_forward_t(const PoolShape& s, const T* x, T* y) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    const T* xp = x + p * in_plane;
    T* yp = y + p * out_plane;
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) yp[oy * ow + ox] = xp[window_argmax(xp, s.w, oy, ox)];
  }
}

template <typename T>
void dense_forward_t(const DenseShape& s, const T* x, const T* weight, const T* bias, T* y) {
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < s.out; ++o) {
      const T* xr = x + static_cast<std::size_t>(n) * s.in;
      const T* wr = weight + static_cast<std::size_t>(o) * s.in;
      double acc = bias[o];
      for (int i = 0; i < s.in; ++i) acc += static_cast<double>(xr[i]) * wr[i];
      y[static_cast<std::size_t>(n) * s.out + o] = static_cast<T>(acc);
    }
}

void check_label(uint8_t label, int classes, int sample) {
  MB_CHECK(label < classes, DataError, "label {} of sample {} is not a class (the model has {} classes)",
           static_cast<int>(label), sample, classes);
}

// log(sum(exp(z))) computed stably in double.
template <typename T>
double log_sum_exp(const T* z, int classes) {
  const double zmax = *std::max_element(z, z + classes);
  double sum = 0.0;
  for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - zmax);
  return zmax + std::log(sum);
}

template <typename T>
BatchStats softmax_xent_forward_t(const T* logits, const uint8_t* labels, int n, int classes) {
  BatchStats stats;
  for (int i = 0; i < n; ++i) {
    check_label(labels[i], classes, i);
    const T* z = logits + static_cast<std::size_t>(i) * classes;
    stats.loss_sum += log_sum_exp(z, classes) - static_cast<double>(z[labels[i]]);
    // max_element returns the first maximum: ties go to the lowest class index.
    const int predicted = static_cast<int>(std::max_element(z, z + classes) - z);
    if (predicted == labels[i]) ++stats.correct;
  }
  stats.samples = n;
  return stats;
}

}  // namespace

// ---- conv2d -------------------------------------------------------------------------------

void conv2d_forward(const ConvShape& s, const float* x, const float* weight, const float* bias, float* y) {
  conv2d_forward_t(s, x, weight, bias, y);
}

void conv2d_backward(const ConvShape& s, const float* x, const float* weight, const float* dy, float* dx,
                     float* dweight, float* dbias) {
  const int oh = s.out_h(), ow = s.out_w(), k = s.k;

  // dbias[co] = sum over n, oy, ox of dy.
  for (int co = 0; co < s.c_out; ++co) {
    double acc = 0.0;
    for (int n = 0; n < s.n; ++n)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) acc += dy[idx4(n, co, oy, ox, s.c_out, oh, ow)];
    dbias[co] = static_cast<float>(acc);
  }

  // dweight[co,ci,ky,kx] = sum over n, oy, ox of dy[n,co,oy,ox] * x[n,ci,oy+ky,ox+kx].
  for (int co = 0; co < s.c_out; ++co)
    for (int ci = 0; ci < s.c_in; ++ci)
      for (int ky = 0; ky < k; ++ky)
        for (int kx = 0; kx < k; ++kx) {
          double acc = 0.0;
          for (int n = 0; n < s.n; ++n)
            for (int oy = 0; oy < oh; ++oy) {
              const float* dy_row = dy + idx4(n, co, oy, 0, s.c_out, oh, ow);
              const float* x_row = x + idx4(n, ci, oy + ky, kx, s.c_in, s.h, s.w);
              for (int ox = 0; ox < ow; ++ox) acc += static_cast<double>(dy_row[ox]) * x_row[ox];
            }
          dweight[idx4(co, ci, ky, kx, s.c_in, k, k)] = static_cast<float>(acc);
        }

  if (dx == nullptr) return;
  // dx[n,ci,iy,ix] = sum over co, ky, kx of dy[n,co,iy-ky,ix-kx] * w[co,ci,ky,kx] (gathered,
  // so each dx is one double sum written once).
  for (int n = 0; n < s.n; ++n)
    for (int ci = 0; ci < s.c_in; ++ci)
      for (int iy = 0; iy < s.h; ++iy)
        for (int ix = 0; ix < s.w; ++ix) {
          double acc = 0.0;
          for (int co = 0; co < s.c_out; ++co)
            for (int ky = 0; ky < k; ++ky) {
              const int oy = iy - ky;
              if (oy < 0 || oy >= oh) continue;
              for (int kx = 0; kx < k; ++kx) {
                const int ox = ix - kx;
                if (ox < 0 || ox >= ow) continue;
                acc += static_cast<double>(dy[idx4(n, co, oy, ox, s.c_out, oh, ow)]) *
                       weight[idx4(co, ci, ky, kx, s.c_in, k, k)];
              }
            }
          dx[idx4(n, ci, iy, ix, s.c_in, s.h, s.w)] = static_cast<float>(acc);
        }
}

// ---- ReLU ---------------------------------------------------------------------------------

void relu_forward(const float* x, float* y, std::size_t count) { relu_forward_t(x, y, count); }

void relu_backward(const float* y, const float* dy, float* dx, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// ---- max pooling --------------------------------------------------------------------------

void maxpool2x2_forward(const PoolShape& s, const float* x, float* y) { maxpool2x2_forward_t(s, x, y); }

void maxpool2x2_backward(const PoolShape& s, const float* x, const float* dy, float* dx) {
  const int oh = s.out_h(), ow = s.out_w();
  const std::size_t in_plane = static_cast<std::size_t>(s.h) * s.w;
  const std::size_t out_plane = static_cast<std::size_t>(oh) * ow;
  std::fill(dx, dx + static_cast<std::size_t>(s.n) * s.c * in_plane, 0.0f);
  for (std::size_t p = 0; p < static_cast<std::size_t>(s.n) * s.c; ++p) {
    const float* xp = x + p * in_plane;
    float* dxp = dx + p * in_plane;
    const float* dyp = dy + p * out_plane;
    // Windows do not overlap (stride 2), so each dx receives at most one dy.
    for (int oy = 0; oy < oh; ++oy)
      for (int ox = 0; ox < ow; ++ox) dxp[window_argmax(xp, s.w, oy, ox)] = dyp[oy * ow + ox];
  }
}

// ---- dense --------------------------------------------------------------------------------

void dense_forward(const DenseShape& s, const float* x, const float* weight, const float* bias, float* y) {
  dense_forward_t(s, x, weight, bias, y);
}

void dense_backward(const DenseShape& s, const float* x, const float* weight, const float* dy, float* dx,
                    float* dweight, float* dbias) {
  for (int o = 0; o < s.out; ++o) {
    double acc = 0.0;
    for (int n = 0; n < s.n; ++n) acc += dy[static_cast<std::size_t>(n) * s.out + o];
    dbias[o] = static_cast<float>(acc);
  }
  // dweight[o,i] = sum over n of dy[n,o] x[n,i]: one double accumulator row per output.
  std::vector<double> row(static_cast<std::size_t>(s.in));
  for (int o = 0; o < s.out; ++o) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int n = 0; n < s.n; ++n) {
      const double g = dy[static_cast<std::size_t>(n) * s.out + o];
      const float* xr = x + static_cast<std::size_t>(n) * s.in;
      for (int i = 0; i < s.in; ++i) row[i] += g * xr[i];
    }
    float* dwr = dweight + static_cast<std::size_t>(o) * s.in;
    for (int i = 0; i < s.in; ++i) dwr[i] = static_cast<float>(row[i]);
  }
  if (dx == nullptr) return;
  // dx[n,i] = sum over o of dy[n,o] w[o,i].
  for (int n = 0; n < s.n; ++n) {
    std::fill(row.begin(), row.end(), 0.0);
    for (int o = 0; o < s.out; ++o) {
      const double g = dy[static_cast<std::size_t>(n) * s.out + o];
      const float* wr = weight + static_cast<std::size_t>(o) * s.in;
      for (int i = 0; i < s.in; ++i) row[i] += g * wr[i];
    }
    float* dxr = dx + static_cast<std::size_t>(n) * s.in;
    for (int i = 0; i < s.in; ++i) dxr[i] = static_cast<float>(row[i]);
  }
}

// ---- softmax + cross-entropy --------------------------------------------------------------

BatchStats softmax_xent_forward(const float* logits, const uint8_t* labels, int n, int classes) {
  return softmax_xent_forward_t(logits, labels, n, classes);
}

void softmax_xent_backward(const float* logits, const uint8_t* labels, int n, int classes, float scale,
                           float* dlogits) {
  for (int i = 0; i < n; ++i) {
    check_label(labels[i], classes, i);
    const float* z = logits + static_cast<std::size_t>(i) * classes;
    float* dz = dlogits + static_cast<std::size_t>(i) * classes;
    const double lse = log_sum_exp(z, classes);
    for (int c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c]) - lse);
      dz[c] = static_cast<float>((p - (c == labels[i] ? 1.0 : 0.0)) * scale);
    }
  }
}

}  // namespace mb::ref

// ---- the whole model ----------------------------------------------------------------------

namespace mb {

using namespace mb::cnn;

void normalize_pixels(const uint8_t* pixels, std::size_t count, float* out) {
  for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(pixels[i]) / 255.0f;
}

void ReferenceWorkspace::reserve(int n) {
  if (n <= capacity) return;
  const auto per = [n](int per_sample) { return static_cast<std::size_t>(n) * per_sample; };
  conv1.resize(per(kConv1Out * kConv1Side * kConv1Side));
  pool1.resize(per(kConv1Out * kPool1Side * kPool1Side));
  conv2.resize(per(kConv2Out * kConv2Side * kConv2Side));
  pool2.resize(per(kFlat));
  fc1.resize(per(hidden));
  logits.resize(per(kClasses));
  d_conv1.resize(conv1.size());
  d_pool1.resize(pool1.size());
  d_conv2.resize(conv2.size());
  d_pool2.resize(pool2.size());
  d_fc1.resize(fc1.size());
  d_logits.resize(logits.size());
  capacity = n;
}

namespace {

// Activation floats per sample (the ReLUs run over n times these).
constexpr std::size_t kConv1PerSample = std::size_t{kConv1Out} * kConv1Side * kConv1Side;
constexpr std::size_t kConv2PerSample = std::size_t{kConv2Out} * kConv2Side * kConv2Side;

// The layer shapes and parameter offsets of the model for a batch of n.
struct ModelShapes {
  ref::ConvShape conv1, conv2;
  ref::PoolShape pool1, pool2;
  ref::DenseShape fc1, fc2;
  ParamLayout layout;
  std::size_t fc1_per_sample;
  ModelShapes(int n, int hidden)
      : conv1{n, 1, kImageSide, kImageSide, kConv1Out, kKernel},
        conv2{n, kConv1Out, kPool1Side, kPool1Side, kConv2Out, kKernel},
        pool1{n, kConv1Out, kConv1Side, kConv1Side},
        pool2{n, kConv2Out, kConv2Side, kConv2Side},
        fc1{n, kFlat, hidden},
        fc2{n, hidden, kClasses},
        layout(param_layout(hidden)),
        fc1_per_sample(std::size_t(hidden)) {}
  template <typename T>
  T* tensor(T* params, ParamId id) const {
    return params + layout[id].offset;
  }
};

void check_batch(int n) { MB_CHECK(n >= 0, ConfigError, "batch of {} samples: must be >= 0", n); }

// Where one forward pass leaves its activations (post-ReLU where a ReLU follows).
template <typename T>
struct Activations {
  T *conv1, *pool1, *conv2, *pool2, *fc1, *logits;
};

template <typename T>
void forward_t(const T* params, const T* images, int n, int hidden, const Activations<T>& a) {
  const ModelShapes s(n, hidden);
  ref::conv2d_forward_t(s.conv1, images, s.tensor(params, kConv1W), s.tensor(params, kConv1B), a.conv1);
  ref::relu_forward_t(a.conv1, a.conv1, n * kConv1PerSample);
  ref::maxpool2x2_forward_t(s.pool1, a.conv1, a.pool1);
  ref::conv2d_forward_t(s.conv2, a.pool1, s.tensor(params, kConv2W), s.tensor(params, kConv2B), a.conv2);
  ref::relu_forward_t(a.conv2, a.conv2, n * kConv2PerSample);
  ref::maxpool2x2_forward_t(s.pool2, a.conv2, a.pool2);
  ref::dense_forward_t(s.fc1, a.pool2, s.tensor(params, kFc1W), s.tensor(params, kFc1B), a.fc1);
  ref::relu_forward_t(a.fc1, a.fc1, n * s.fc1_per_sample);
  ref::dense_forward_t(s.fc2, a.fc1, s.tensor(params, kFc2W), s.tensor(params, kFc2B), a.logits);
}

void forward(const float* params, const float* images, int n, ReferenceWorkspace& ws) {
  ws.reserve(n);
  forward_t(params, images, n, ws.hidden,
            Activations<float>{ws.conv1.data(), ws.pool1.data(), ws.conv2.data(), ws.pool2.data(), ws.fc1.data(),
                               ws.logits.data()});
}

}  // namespace

BatchStats reference_forward(const float* params, const float* images, const uint8_t* labels, int n,
                             ReferenceWorkspace& ws) {
  check_batch(n);
  if (n == 0) return {};
  forward(params, images, n, ws);
  return ref::softmax_xent_forward(ws.logits.data(), labels, n, kClasses);
}

BatchStats reference_forward_backward(const float* params, const float* images, const uint8_t* labels, int n,
                                      float grad_scale, float* grads, ReferenceWorkspace& ws) {
  check_batch(n);
  if (n == 0) {
    std::fill(grads, grads + param_count(ws.hidden), 0.0f);
    return {};
  }
  forward(params, images, n, ws);
  const BatchStats stats = ref::softmax_xent_forward(ws.logits.data(), labels, n, kClasses);

  // The activations were sized by forward(); the ReLU backward steps run in place on the
  // gradient buffers, reading the stored post-ReLU activations.
  const ModelShapes s(n, ws.hidden);
  ref::softmax_xent_backward(ws.logits.data(), labels, n, kClasses, grad_scale, ws.d_logits.data());
  ref::dense_backward(s.fc2, ws.fc1.data(), s.tensor(params, kFc2W), ws.d_logits.data(), ws.d_fc1.data(),
                      s.tensor(grads, kFc2W), s.tensor(grads, kFc2B));
  ref::relu_backward(ws.fc1.data(), ws.d_fc1.data(), ws.d_fc1.data(), n * s.fc1_per_sample);
  ref::dense_backward(s.fc1, ws.pool2.data(), s.tensor(params, kFc1W), ws.d_fc1.data(), ws.d_pool2.data(),
                      s.tensor(grads, kFc1W), s.tensor(grads, kFc1B));
  ref::maxpool2x2_backward(s.pool2, ws.conv2.data(), ws.d_pool2.data(), ws.d_conv2.data());
  ref::relu_backward(ws.conv2.data(), ws.d_conv2.data(), ws.d_conv2.data(),
                     n * kConv2PerSample);
  ref::conv2d_backward(s.conv2, ws.pool1.data(), s.tensor(params, kConv2W), ws.d_conv2.data(), ws.d_pool1.data(),
                       s.tensor(grads, kConv2W), s.tensor(grads, kConv2B));
  ref::maxpool2x2_backward(s.pool1, ws.conv1.data(), ws.d_pool1.data(), ws.d_conv1.data());
  ref::relu_backward(ws.conv1.data(), ws.d_conv1.data(), ws.d_conv1.data(),
                     n * kConv1PerSample);
  // Nothing below conv1 needs an input gradient.
  ref::conv2d_backward(s.conv1, images, s.tensor(params, kConv1W), ws.d_conv1.data(), nullptr,
                       s.tensor(grads, kConv1W), s.tensor(grads, kConv1B));
  return stats;
}


BatchStats reference_forward_double(const double* params, const double* images, const uint8_t* labels, int n,
                                    int hidden) {
  check_batch(n);
  if (n == 0) return {};
  const auto per = [n](std::size_t per_sample) { return std::vector<double>(n * per_sample); };
  std::vector<double> conv1 = per(kConv1PerSample), pool1 = per(kConv1PerSample / 4), conv2 = per(kConv2PerSample),
                      pool2 = per(kFlat), fc1 = per(std::size_t(hidden)), logits = per(kClasses);
  forward_t(params, images, n, hidden,
            Activations<double>{conv1.data(), pool1.data(), conv2.data(), pool2.data(), fc1.data(), logits.data()});
  return ref::softmax_xent_forward_t(logits.data(), labels, n, kClasses);
}

}  // namespace mb

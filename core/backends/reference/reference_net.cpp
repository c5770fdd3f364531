// The reference interpreter: a model's layers over the reference loops, in list order.
#include "backends/reference/reference_net.h"

#include <algorithm>

#include "backends/reference/layer_loops.h"
#include "util/error.h"

namespace mb {
namespace {

ref::ConvShape conv_shape(const LayerShape& l, int n) {
  return {n, l.in.c, l.in.h, l.in.w, l.layer.units, l.layer.kernel,
          l.layer.padding == Padding::Same ? (l.layer.kernel - 1) / 2 : 0};
}
ref::PoolShape pool_shape(const LayerShape& l, int n) {
  return {n, l.in.c, l.in.h, l.in.w, l.layer.padding == Padding::Same};
}
ref::DenseShape dense_shape(const LayerShape& l, int n) { return {n, int(l.in.size()), l.layer.units}; }

template <typename T>
const T* tensor(const ModelShape& m, const T* params, int index) {
  return index < 0 ? nullptr : params + m.params[std::size_t(index)].offset;
}

void check_batch(int n) { MB_CHECK(n >= 0, ConfigError, "batch of {} samples: must be >= 0", n); }

// Dropout of one layer's input `x` into `y` (n samples of `per` elements); `kept` records the
// mask for backward (nullptr: not needed).
template <typename T>
void dropout_forward(const LayerShape& l, int layer, int n, const SampleKeys& samples, const T* x, T* y,
                     uint8_t* kept) {
  const std::size_t per = std::size_t(l.in.size());
  const T scale = T(dropout_scale(l.layer.rate));
  for (int i = 0; i < n; ++i) {
    const DropoutMask mask(samples.key, layer, samples.id(i), l.layer.rate);
    for (std::size_t e = 0; e < per; ++e) {
      const bool keep = mask.keeps(int64_t(e));
      y[i * per + e] = keep ? x[i * per + e] * scale : T(0);
      if (kept) kept[i * per + e] = keep;
    }
  }
}

// The forward pass: each layer's output into outs[i] (kept[i] for dropout masks when training).
template <typename T>
void forward_layers(const ModelShape& m, const T* params, const T* images, int n, bool training,
                    const SampleKeys& samples, const std::vector<T*>& outs, const std::vector<uint8_t*>& kept) {
  const T* x = images;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const LayerShape& l = m.layers[i];
    T* y = outs[i];
    const std::size_t count = std::size_t(n) * std::size_t(l.out.size());
    switch (l.layer.kind) {
      case LayerKind::Conv2D:
        ref::loops::conv2d_forward(conv_shape(l, n), x, tensor(m, params, l.weight), tensor(m, params, l.bias), y);
        break;
      case LayerKind::Dense:
        ref::loops::dense_forward(dense_shape(l, n), x, tensor(m, params, l.weight), tensor(m, params, l.bias), y);
        break;
      case LayerKind::MaxPool: ref::loops::maxpool2x2_forward(pool_shape(l, n), x, y); break;
      case LayerKind::AvgPool: ref::loops::avgpool2x2_forward(pool_shape(l, n), x, y); break;
      case LayerKind::GlobalAvgPool: ref::loops::global_avg_pool_forward(n, l.in.c, l.in.h * l.in.w, x, y); break;
      case LayerKind::Flatten: std::copy(x, x + count, y); break;
      case LayerKind::Dropout:
        if (training)
          dropout_forward(l, int(i), n, samples, x, y, kept[i]);
        else
          std::copy(x, x + count, y);
        break;
    }
    if (l.layer.has_params() && l.layer.activation == Activation::Relu) ref::loops::relu_forward(y, y, count);
    x = y;
  }
}

// One layer's backward: d_out (its output's gradient, the ReLU's derivative not yet applied)
// into the parameter gradients and, with dx, its input's gradient.
void backward_layer(const ModelShape& m, std::size_t i, int n, const float* params, const float* x, float* grads,
                    ReferenceWorkspace& ws, float* dx) {
  const LayerShape& l = m.layers[i];
  float* d = ws.d_out[i].data();
  const float* y = ws.out[i].data();
  const std::size_t count = std::size_t(n) * std::size_t(l.out.size());
  float* dw = l.weight < 0 ? nullptr : grads + m.params[std::size_t(l.weight)].offset;
  float* db = l.bias < 0 ? nullptr : grads + m.params[std::size_t(l.bias)].offset;
  if (l.layer.has_params() && l.layer.activation == Activation::Relu) ref::relu_backward(y, d, d, count);
  switch (l.layer.kind) {
    case LayerKind::Conv2D: ref::conv2d_backward(conv_shape(l, n), x, tensor(m, params, l.weight), d, dx, dw, db); break;
    case LayerKind::Dense: ref::dense_backward(dense_shape(l, n), x, tensor(m, params, l.weight), d, dx, dw, db); break;
    case LayerKind::MaxPool:
      if (dx) ref::maxpool2x2_backward(pool_shape(l, n), x, d, dx);
      break;
    case LayerKind::AvgPool:
      if (dx) ref::avgpool2x2_backward(pool_shape(l, n), d, dx);
      break;
    case LayerKind::GlobalAvgPool:
      if (dx) ref::global_avg_pool_backward(n, l.in.c, l.in.h * l.in.w, d, dx);
      break;
    case LayerKind::Flatten:
      if (dx) std::copy(d, d + count, dx);
      break;
    case LayerKind::Dropout:
      if (dx) {
        const float scale = dropout_scale(l.layer.rate);
        const uint8_t* kept = ws.kept[i].data();
        for (std::size_t e = 0; e < count; ++e) dx[e] = kept[e] ? d[e] * scale : 0.0f;
      }
      break;
  }
}

std::vector<float*> outputs(ReferenceWorkspace& ws) {
  std::vector<float*> out;
  for (auto& o : ws.out) out.push_back(o.data());
  return out;
}

std::vector<uint8_t*> masks(ReferenceWorkspace& ws) {
  std::vector<uint8_t*> out;
  for (auto& k : ws.kept) out.push_back(k.empty() ? nullptr : k.data());
  return out;
}

}  // namespace

ReferenceWorkspace::ReferenceWorkspace(const ModelSpec& m)
    : model(m), out(m.shape().layers.size()), d_out(m.shape().layers.size()), kept(m.shape().layers.size()) {}

void ReferenceWorkspace::reserve(int n) {
  if (n <= capacity) return;
  const auto& layers = model.shape().layers;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::size_t size = std::size_t(n) * std::size_t(layers[i].out.size());
    out[i].resize(size);
    d_out[i].resize(size);
    if (layers[i].layer.kind == LayerKind::Dropout) kept[i].resize(size);
  }
  capacity = n;
}

BatchStats reference_forward(const float* params, const float* images, const uint8_t* labels, int n,
                             ReferenceWorkspace& ws) {
  check_batch(n);
  if (n == 0) return {};
  ws.reserve(n);
  const ModelShape& m = ws.model.shape();
  forward_layers(m, params, images, n, false, {}, outputs(ws), masks(ws));
  return ref::softmax_xent_forward(ws.out.back().data(), labels, n, m.classes);
}

BatchStats reference_forward_backward(const float* params, const float* images, const uint8_t* labels, int n,
                                      float grad_scale, float* grads, ReferenceWorkspace& ws,
                                      const SampleKeys& samples) {
  check_batch(n);
  const ModelShape& m = ws.model.shape();
  if (n == 0) {
    std::fill(grads, grads + m.param_count, 0.0f);
    return {};
  }
  ws.reserve(n);
  forward_layers(m, params, images, n, true, samples, outputs(ws), masks(ws));
  const BatchStats stats = ref::softmax_xent_forward(ws.out.back().data(), labels, n, m.classes);
  ref::softmax_xent_backward(ws.out.back().data(), labels, n, m.classes, grad_scale, ws.d_out.back().data());
  for (std::size_t i = m.layers.size(); i-- > 0;) {
    const float* x = i == 0 ? images : ws.out[i - 1].data();
    // Nothing below the first layer with parameters needs an input gradient.
    float* dx = m.layers[i].needs_input_grad ? ws.d_out[i - 1].data() : nullptr;
    backward_layer(m, i, n, params, x, grads, ws, dx);
  }
  return stats;
}

BatchStats reference_forward_double(const double* params, const double* images, const uint8_t* labels, int n,
                                    const ModelSpec& model, bool training, const SampleKeys& samples) {
  check_batch(n);
  if (n == 0) return {};
  const ModelShape& m = model.shape();
  std::vector<std::vector<double>> out;
  std::vector<double*> outs;
  for (const LayerShape& l : m.layers) out.emplace_back(std::size_t(n) * std::size_t(l.out.size()));
  for (auto& o : out) outs.push_back(o.data());
  forward_layers(m, params, images, n, training, samples, outs, std::vector<uint8_t*>(m.layers.size(), nullptr));
  return ref::loops::softmax_xent_forward(out.back().data(), labels, n, m.classes);
}

}  // namespace mb

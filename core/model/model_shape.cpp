// Shape inference: one pass over the layers, checking each against what the engines train.
#include "model/model_shape.h"

#include <fmt/format.h>

#include "model/model_text.h"
#include "util/error.h"

namespace mb {
namespace {

std::string_view short_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::Conv2D: return "conv";
    case LayerKind::MaxPool: return "pool";
    case LayerKind::AvgPool: return "avgpool";
    case LayerKind::GlobalAvgPool: return "gap";
    case LayerKind::Flatten: return "flatten";
    case LayerKind::Dense: return "fc";
    case LayerKind::Dropout: return "drop";
  }
  return "layer";
}

// Builds the shape layer by layer; `fail` names the layer being added.
class Inference {
 public:
  explicit Inference(const ImageShape& input) {
    m_.input = input;
    cur_ = input;
    m_.activation_floats_per_image = input.size();
  }

  void add(const Layer& layer, int index, bool last) {
    index_ = index;
    word_ = layer_text(layer, last);
    LayerShape s;
    s.layer = layer;
    s.in = cur_;
    s.flat_in = flat_;
    s.needs_input_grad = has_params_below_;
    ++counts_[std::size_t(layer.kind)];
    const int n = counts_[std::size_t(layer.kind)];
    s.name = layer.kind == LayerKind::GlobalAvgPool || layer.kind == LayerKind::Flatten
                 ? std::string(short_name(layer.kind)) + (n > 1 ? std::to_string(n) : "")
                 : fmt::format("{}{}", short_name(layer.kind), n);
    switch (layer.kind) {
      case LayerKind::Conv2D: conv(layer, s); break;
      case LayerKind::MaxPool:
      case LayerKind::AvgPool: pool(layer, s); break;
      case LayerKind::GlobalAvgPool:
        need_image("global average pooling");
        cur_ = {1, 1, cur_.c};
        flat_ = true;
        break;
      case LayerKind::Flatten:
        // A Dense must read it (a flat model takes nothing else), and its side is an int.
        if (cur_.size() > int64_t(kMaxParams)) fail(fmt::format("its {} values are too many for a Dense", cur_.size()));
        cur_ = {1, 1, int(cur_.size())};
        flat_ = true;
        break;
      case LayerKind::Dense: dense(layer, s); break;
      case LayerKind::Dropout:
        if (!(layer.rate >= 0 && layer.rate < 1)) fail("a dropout rate must be at least 0 and below 100 %");
        break;
    }
    if (last && (layer.kind != LayerKind::Dense || layer.activation != Activation::Linear))
      fail("the last layer must be a linear Dense giving the logits (softmax and cross-entropy follow it)");
    if (last && (layer.units < 2 || layer.units > kMaxClasses))
      fail(fmt::format("the logits need 2 to {} classes", kMaxClasses));
    s.out = cur_;
    s.flat_out = flat_;
    has_params_below_ = has_params_below_ || layer.has_params();
    m_.activation_floats_per_image += cur_.size();
    m_.layers.push_back(std::move(s));
  }

  ModelShape finish() {
    MB_CHECK(!m_.layers.empty(), ConfigError, "--model: a model needs at least one layer");
    m_.classes = m_.layers.back().layer.units;
    MB_CHECK(m_.param_count <= kMaxParams, ConfigError,
             "--model: {} parameters is more than a replica may hold ({}: 1 GiB per copy, four copies with Adam)",
             m_.param_count, kMaxParams);
    for (const LayerShape& l : m_.layers) {
      if (!l.layer.has_params()) continue;
      // Multiply-adds x 2: forward, the weight gradient, and the data gradient where a layer
      // below needs it (nothing below the first layer with parameters does).
      m_.train_flops_per_image += 2 * l.macs * (l.needs_input_grad ? 3 : 2);
    }
    return std::move(m_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError(fmt::format("--model: layer {} ('{}'): {}", index_ + 1, word_, why));
  }
  void need_image(const char* what) const {
    if (flat_) fail(fmt::format("{} needs an image, but the layers before it flattened the model", what));
  }

  void conv(const Layer& l, LayerShape& s) {
    need_image("a convolution");
    if (l.units < 1 || l.units > kMaxFilters) fail(fmt::format("a convolution takes 1 to {} filters", kMaxFilters));
    if (l.kernel < 1 || l.kernel > kMaxKernel || l.kernel % 2 == 0)
      fail(fmt::format("the kernel must be odd, 1 to {} (stride 1)", kMaxKernel));
    ImageShape out{cur_.h, cur_.w, l.units};
    if (l.padding == Padding::Valid) {
      if (l.kernel > cur_.h || l.kernel > cur_.w)
        fail(fmt::format("a {0}x{0} kernel is larger than its {1}x{2} input (valid padding); use same padding "
                         "(conv{3}@{0}s) or a smaller kernel",
                         l.kernel, cur_.h, cur_.w, l.units));
      out.h = cur_.h - l.kernel + 1;
      out.w = cur_.w - l.kernel + 1;
    }
    const int k = l.kernel, cin = cur_.c;
    s.weight = add_param(s.name + ".weight", 4, {l.units, cin, k, k}, cin * k * k, l.units * k * k);
    if (l.bias) s.bias = add_param(s.name + ".bias", 1, {l.units, 0, 0, 0}, 0, 0);
    s.macs = double(out.h) * out.w * l.units * cin * k * k;
    s.param_count = std::size_t(l.units) * cin * k * k + (l.bias ? l.units : 0);
    cur_ = out;
  }

  void pool(const Layer& l, LayerShape&) {
    need_image("a pooling");
    if (l.padding == Padding::Valid && (cur_.h < 2 || cur_.w < 2))
      fail(fmt::format("a 2x2 pooling needs at least 2x2 pixels, its input is {}x{} (same padding rounds up: {}@s)",
                       cur_.h, cur_.w, l.kind == LayerKind::MaxPool ? "pool" : "avgpool"));
    if (l.padding == Padding::Valid) {
      cur_.h /= 2;
      cur_.w /= 2;
    } else {
      cur_.h = (cur_.h + 1) / 2;
      cur_.w = (cur_.w + 1) / 2;
    }
  }

  void dense(const Layer& l, LayerShape& s) {
    if (l.units < 1 || l.units > kMaxUnits) fail(fmt::format("a dense layer takes 1 to {} units", kMaxUnits));
    const int64_t in = cur_.size();
    if (in > int64_t(kMaxParams)) fail("its input is too large");
    s.weight = add_param(s.name + ".weight", 2, {l.units, in, 0, 0}, int(in), l.units);
    if (l.bias) s.bias = add_param(s.name + ".bias", 1, {l.units, 0, 0, 0}, 0, 0);
    s.macs = double(in) * l.units;
    s.param_count = std::size_t(in) * std::size_t(l.units) + (l.bias ? l.units : 0);
    cur_ = {1, 1, l.units};
    flat_ = true;
  }

  int add_param(std::string name, int rank, std::array<int64_t, 4> shape, int fan_in, int fan_out) {
    ParamTensor p;
    p.name = std::move(name);
    p.rank = rank;
    p.shape = shape;
    p.size = 1;
    for (int d = 0; d < rank; ++d) p.size *= std::size_t(shape[std::size_t(d)]);
    p.offset = m_.param_count;
    p.fan_in = fan_in;
    p.fan_out = fan_out;
    p.layer = index_;
    m_.param_count += p.size;
    if (m_.param_count > kMaxParams) fail("the model has more parameters than a replica may hold");
    m_.params.push_back(std::move(p));
    return int(m_.params.size()) - 1;
  }

  ModelShape m_;
  ImageShape cur_;
  bool flat_ = false;
  bool has_params_below_ = false;
  int index_ = 0;
  std::string word_;
  std::array<int, 7> counts_{};
};

}  // namespace

double ModelShape::memory_bytes(int64_t batch) const {
  const double state = 4.0 * double(param_count) * sizeof(float);   // params, grads, Adam's m and v
  const double activations = 2.0 * double(activation_floats_per_image) * double(batch) * sizeof(float);
  return state + activations;
}

ModelShape infer_shape(const ImageShape& input, const std::vector<Layer>& layers) {
  MB_CHECK(input.h >= 1 && input.h <= kMaxImageSide && input.w >= 1 && input.w <= kMaxImageSide, ConfigError,
           "--model: an input of {}x{} pixels is outside 1..{} per side", input.h, input.w, kMaxImageSide);
  MB_CHECK(input.c >= 1 && input.c <= kMaxChannels, ConfigError, "--model: an input of {} channels is outside 1..{}",
           input.c, kMaxChannels);
  Inference inference(input);
  for (std::size_t i = 0; i < layers.size(); ++i) inference.add(layers[i], int(i), i + 1 == layers.size());
  return inference.finish();
}

}  // namespace mb

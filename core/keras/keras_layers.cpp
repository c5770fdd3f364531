// Keras layers as mirrorbench layers (see keras_layers.h).
#include "keras/keras_layers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/model_shape.h"
#include "util/error.h"

namespace mb {
namespace {

using json = nlohmann::json;

// Classes the engines do not train, with what would be needed: a teaching refusal, not "unknown".
const std::map<std::string, std::string, std::less<>>& unsupported() {
  static const std::map<std::string, std::string, std::less<>> table = {
      {"BatchNormalization", "batch statistics across replicas; until mirrorbench's N-vs-1 issue lands, remove it"},
      {"LayerNormalization", "normalisation layers are not trained here; remove it"},
      {"LeakyReLU", "only ReLU and linear activations are trained; use Activation('relu')"},
      {"PReLU", "only ReLU and linear activations are trained; use Activation('relu')"},
      {"ELU", "only ReLU and linear activations are trained; use Activation('relu')"},
      {"Softmax", "softmax is only the output's (the loss's); end with Dense(classes, activation='softmax')"},
      {"Embedding", "mirrorbench trains image classifiers: 2-D convolutions, pooling, dense and dropout layers"},
      {"LSTM", "recurrent layers are not trained here (image classifiers only)"},
      {"GRU", "recurrent layers are not trained here (image classifiers only)"},
      {"SimpleRNN", "recurrent layers are not trained here (image classifiers only)"},
      {"Bidirectional", "recurrent layers are not trained here (image classifiers only)"},
      {"Conv1D", "only 2-D convolutions (Conv2D) are trained"},
      {"Conv3D", "only 2-D convolutions (Conv2D) are trained"},
      {"Conv2DTranspose", "only Conv2D (stride 1) is trained"},
      {"SeparableConv2D", "only Conv2D is trained; a separable convolution would need its own kernels"},
      {"DepthwiseConv2D", "only Conv2D is trained; a depthwise convolution would need its own kernels"},
      {"GlobalMaxPooling2D", "only GlobalAveragePooling2D is trained"},
      {"Lambda", "a Lambda holds Python code, which mirrorbench never runs; write it as built-in layers"},
      {"Reshape", "only Flatten and GlobalAveragePooling2D change the shape"},
      {"Permute", "only Flatten and GlobalAveragePooling2D change the shape"},
      {"ZeroPadding2D", "use padding='same' on the convolution instead"},
      {"Cropping2D", "crop the data instead"},
      {"UpSampling2D", "only 2x2 pooling changes the image size"},
      {"Add", "a join of branches: mirrorbench trains a chain of layers"},
      {"Concatenate", "a join of branches: mirrorbench trains a chain of layers"},
      {"Multiply", "a join of branches: mirrorbench trains a chain of layers"},
      {"Average", "a join of branches: mirrorbench trains a chain of layers"},
      {"Sequential", "a nested model: write its layers into the outer one"},
      {"Functional", "a nested model: write its layers into the outer one"},
      {"Model", "a nested model: write its layers into the outer one"},
      {"Resizing", "preprocessing other than Rescaling(1/255) belongs in the data, not the model"},
      {"CenterCrop", "preprocessing other than Rescaling(1/255) belongs in the data, not the model"},
      {"Normalization", "preprocessing other than Rescaling(1/255) belongs in the data, not the model"},
      {"RandomFlip", "augmentation layers are not trained here; augment the data instead"},
      {"RandomRotation", "augmentation layers are not trained here; augment the data instead"},
      {"RandomZoom", "augmentation layers are not trained here; augment the data instead"},
      {"RandomTranslation", "augmentation layers are not trained here; augment the data instead"},
      {"RandomContrast", "augmentation layers are not trained here; augment the data instead"},
      {"RandomCrop", "augmentation layers are not trained here; augment the data instead"},
      {"GaussianNoise", "noise layers are not trained here"},
      {"SpatialDropout2D", "only Dropout is trained"},
      {"ActivityRegularization", "regularisers are not trained here"},
  };
  return table;
}

// Keras 1/2 names of the same classes.
std::string_view canonical_class(std::string_view cls) {
  if (cls == "Convolution2D") return "Conv2D";
  if (cls == "MaxPool2D") return "MaxPooling2D";
  if (cls == "AvgPool2D") return "AveragePooling2D";
  if (cls == "GlobalAvgPool2D") return "GlobalAveragePooling2D";
  return cls;
}

class Translator {
 public:
  Translator(const std::vector<KerasLayer>& layers, std::string_view origin) : layers_(layers), origin_(origin) {}

  TranslatedModel run() {
    out_.input = input_shape();
    std::size_t last_weighted = 0;
    for (std::size_t i = 0; i < layers_.size(); ++i)
      if (canonical_class(layers_[i].cls) == "Dense") last_weighted = i;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      at_ = &layers_[i];
      translate(i == last_weighted);
    }
    at_ = layers_.empty() ? nullptr : &layers_.back();
    if (out_.layers.empty() || out_.layers.back().kind != LayerKind::Dense)
      fail("the model must end in a Dense layer giving the class scores (softmax or linear)");
    if (folded_ > 0)
      out_.notes.push_back(fmt::format("{} Activation layer{} folded into the layer before", folded_, folded_ > 1 ? "s" : ""));
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(std::string_view why) const {
    if (!at_) throw ConfigError(fmt::format("{}: {}", origin_, why));
    const std::string where = at_->index >= 0 ? fmt::format("model.layers[{}]", at_->index) : std::string("the input layer");
    throw ConfigError(fmt::format("{}: {} '{}' ({}): {}", origin_, where, at_->name, at_->cls, why));
  }

  const json& config() const {
    if (!at_->config) fail("no config");
    return *at_->config;
  }
  std::optional<json> field(const char* key) const {
    const auto it = config().find(key);
    if (it == config().end() || it->is_null()) return std::nullopt;
    return *it;
  }
  int positive_int(const char* key, int max) const {
    const auto v = field(key);
    if (!v || !v->is_number_integer() || v->get<int64_t>() < 1 || v->get<int64_t>() > max)
      fail(fmt::format("{} must be a whole number from 1 to {}", key, max));
    return int(v->get<int64_t>());
  }
  // kernel_size, pool_size, strides, dilation_rate: an int or [a, b] with a == b; `fallback` when absent.
  int square(const char* key, int fallback) const {
    const auto v = field(key);
    if (!v) return fallback;
    if (v->is_number_integer()) return int(v->get<int64_t>());
    if (v->is_array() && v->size() == 2 && (*v)[0].is_number_integer() && (*v)[1].is_number_integer() &&
        (*v)[0] == (*v)[1])
      return int((*v)[0].get<int64_t>());
    fail(fmt::format("{} {} is not square: only K x K is trained", key, v->dump()));
  }
  std::string word(const char* key, std::string fallback) const {
    const auto v = field(key);
    return v && v->is_string() ? v->get<std::string>() : fallback;
  }
  // "relu", or Keras 3's {"class_name": "function", "config": "relu"}.
  std::string activation() const {
    const auto v = field("activation");
    if (!v) return "linear";
    if (v->is_string()) return v->get<std::string>();
    if (v->is_object() && v->contains("config") && (*v)["config"].is_string()) return (*v)["config"].get<std::string>();
    fail(fmt::format("activation {} is not a built-in one", v->dump()));
  }
  void channels_last() const {
    if (word("data_format", "channels_last") != "channels_last")
      fail("data_format channels_first: mirrorbench reads Keras's default channels_last models");
  }
  Padding padding() const {
    const std::string p = word("padding", "valid");
    if (p == "valid") return Padding::Valid;
    if (p == "same") return Padding::Same;
    fail(fmt::format("padding '{}': only valid and same are trained", p));
  }

  ImageShape shape_from(const json& dims) const {
    if (!dims.is_array() || dims.size() < 2 || dims.size() > 4)
      fail(fmt::format("input shape {} is not (batch, H, W, C), (batch, H, W) or (batch, features)", dims.dump()));
    std::vector<int> d;
    for (std::size_t i = 1; i < dims.size(); ++i) {
      if (!dims[i].is_number_integer() || dims[i].get<int64_t>() < 1 || dims[i].get<int64_t>() > kMaxImageSide * kMaxChannels)
        fail(fmt::format("input shape {}: every size but the batch's must be known and positive", dims.dump()));
      d.push_back(int(dims[i].get<int64_t>()));
    }
    if (d.size() == 3) return {d[0], d[1], d[2]};
    if (d.size() == 2) return {d[0], d[1], 1};   // images without a channel axis: one channel
    return {1, 1, d[0]};                         // a feature vector
  }

  // The first place that says it: an InputLayer's batch_input_shape (Keras 2) or batch_shape
  // (Keras 3), the first layer's batch_input_shape, the Sequential's build_input_shape, the
  // first layer's build_config (Keras 3).
  ImageShape input_shape() {
    for (const KerasLayer& l : layers_) {
      if (l.cls == "InputLayer") at_ = &l;
      if (!l.config) break;
      for (const char* key : {"batch_input_shape", "batch_shape"})
        if (const auto it = l.config->find(key); it != l.config->end() && !it->is_null()) {
          at_ = &l;
          return shape_from(*it);
        }
      if (l.sequential_build_shape && !l.sequential_build_shape->is_null()) {
        at_ = &l;
        return shape_from(*l.sequential_build_shape);
      }
      if (l.build_config && l.build_config->is_object() && l.build_config->contains("input_shape")) {
        at_ = &l;
        return shape_from(l.build_config->at("input_shape"));
      }
      if (l.cls != "InputLayer") break;
    }
    at_ = nullptr;
    fail("no input shape: give the first layer input_shape=, or start with keras.Input(shape=...), before saving");
  }

  // Whether the layer at hand reads an image (rather than a flat vector) in Keras: no Flatten,
  // GlobalAveragePooling2D or Dense since the input (a Flatten just dropped counts).
  bool image_so_far() const {
    bool image = out_.input.h > 1 || out_.input.w > 1;
    for (const KerasLayer* l = layers_.data(); l < at_; ++l) {
      const std::string_view cls = canonical_class(l->cls);
      if (cls == "Flatten" || cls == "GlobalAveragePooling2D" || cls == "Dense") image = false;
    }
    return image;
  }

  void translate(bool last_dense) {
    const std::string_view cls = canonical_class(at_->cls);
    if (!at_->registered_name.empty() && at_->registered_name.find('>') != std::string::npos)
      fail(fmt::format("a custom layer ({}): its code is Python, which mirrorbench never runs", at_->registered_name));
    if (const auto it = unsupported().find(cls); it != unsupported().end()) fail(it->second);
    if (cls == "InputLayer") {
      if (at_ != &layers_.front()) fail("an input layer after the first: mirrorbench trains a chain of layers");
      return;
    }
    if (!at_->config) fail("no config");
    if (cls == "Conv2D") return conv();
    if (cls == "MaxPooling2D" || cls == "AveragePooling2D") return pool(cls == "MaxPooling2D");
    if (cls == "GlobalAveragePooling2D") {
      channels_last();
      const auto keep = field("keepdims");
      if (keep && keep->is_boolean() && keep->get<bool>()) fail("keepdims=True: only the flat (batch, channels) output is trained");
      out_.layers.push_back(Layer::global_avg_pool());
      return;
    }
    if (cls == "Flatten") {
      // Right before a Dense it is implicit (a Dense on an image flattens it): dropped, so
      // the seed's Keras CNN reads as the reference model itself.
      const std::size_t next = std::size_t(at_ - layers_.data()) + 1;
      if (next < layers_.size() && canonical_class(layers_[next].cls) == "Dense") return;
      out_.layers.push_back(Layer::flatten());
      return;
    }
    if (cls == "Dense") return dense(last_dense);
    if (cls == "Dropout") {
      const auto rate = field("rate");
      if (!rate || !rate->is_number() || !(rate->get<double>() >= 0 && rate->get<double>() < 1))
        fail("rate must be at least 0 and below 1");
      if (field("noise_shape")) fail("noise_shape: only plain Dropout is trained");
      out_.layers.push_back(Layer::dropout(rate->get<double>()));
      return;
    }
    if (cls == "Activation" || cls == "ReLU") return separate_activation(cls == "ReLU");
    if (cls == "Rescaling") return rescaling();
    fail("not a layer mirrorbench trains (Conv2D, MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, Flatten, "
         "Dense, Dropout, Activation, Rescaling)");
  }

  void conv() {
    channels_last();
    const int filters = positive_int("filters", kMaxFilters);
    const int k = square("kernel_size", 0);
    if (k < 1 || k > kMaxKernel || k % 2 == 0) fail(fmt::format("a {0}x{0} kernel: odd kernels 1 to {1} are trained", k, kMaxKernel));
    if (square("strides", 1) != 1) fail("strides other than 1: only stride-1 convolutions are trained (pool to downsample)");
    if (square("dilation_rate", 1) != 1) fail("a dilated convolution: only dilation 1 is trained");
    if (const auto g = field("groups"); g && g->is_number_integer() && g->get<int64_t>() != 1) fail("grouped convolutions are not trained");
    const Activation a = hidden_activation();
    out_.layers.push_back(Layer::conv(filters, k, padding(), a, bias()));
  }

  void pool(bool max) {
    channels_last();
    if (square("pool_size", 2) != 2) fail("only 2x2 pooling is trained");
    const auto strides = field("strides");
    if (strides && square("strides", 2) != 2) fail("pooling strides other than the 2x2 window's are not trained");
    const Padding p = padding();
    out_.layers.push_back(max ? Layer::max_pool(p) : Layer::avg_pool(p));
  }

  void dense(bool last) {
    if (image_so_far())
      fail("a Dense on an image acts on its last axis in Keras (a 1x1 convolution): add Flatten or "
           "GlobalAveragePooling2D before it");
    const int units = positive_int("units", kMaxUnits);
    const std::string a = activation();
    if (last) {
      if (a == "softmax") {
        out_.notes.push_back("the final softmax is the loss's: softmax and cross-entropy on the logits");
      } else if (a == "sigmoid") {
        fail("a sigmoid output (binary or multi-label) is not trained: mirrorbench trains softmax classifiers; use "
             "Dense(classes, activation='softmax')");
      } else if (a != "linear") {
        fail(fmt::format("a '{}' output: the last Dense gives the class scores (softmax, or linear logits)", a));
      }
      out_.layers.push_back(Layer::dense(units, Activation::Linear, bias()));
      return;
    }
    out_.layers.push_back(Layer::dense(units, hidden_activation(), bias()));
  }

  Activation hidden_activation() const {
    const std::string a = activation();
    if (a == "relu") return Activation::Relu;
    if (a == "linear") return Activation::Linear;
    if (a == "softmax") fail("softmax inside the model: only the output's is trained");
    fail(fmt::format("activation '{}': only relu and linear are trained", a));
  }
  bool bias() const {
    const auto b = field("use_bias");
    return !b || !b->is_boolean() || b->get<bool>();
  }

  // Activation('relu') or ReLU() after a linear Conv2D or Dense: that layer's ReLU; a final
  // softmax after the last Dense: the loss's.
  void separate_activation(bool relu_layer) {
    std::string a = relu_layer ? "relu" : activation();
    if (relu_layer) {
      const auto max_value = field("max_value");
      const auto slope = field("negative_slope");
      const auto threshold = field("threshold");
      if ((slope && slope->is_number() && slope->get<double>() != 0) ||
          (threshold && threshold->is_number() && threshold->get<double>() != 0) || max_value)
        fail("a ReLU with a slope, threshold or ceiling: only plain relu is trained");
    }
    if (a == "linear") {
      ++folded_;
      return;
    }
    Layer* before = out_.layers.empty() ? nullptr : &out_.layers.back();
    if (a == "relu") {
      if (!before || !before->has_params() || before->activation != Activation::Linear)
        fail("a ReLU is trained only right after a linear Conv2D or Dense (it is fused into that layer)");
      before->activation = Activation::Relu;
      ++folded_;
      return;
    }
    if (a == "softmax") {
      if (at_ != &layers_.back() || !before || before->kind != LayerKind::Dense)
        fail("softmax is only the output's: right after the last Dense, at the end of the model");
      out_.notes.push_back("the final softmax is the loss's: softmax and cross-entropy on the logits");
      ++folded_;
      return;
    }
    if (a == "sigmoid")
      fail("a sigmoid (binary or multi-label) is not trained: mirrorbench trains softmax classifiers");
    fail(fmt::format("activation '{}': only relu and linear are trained", a));
  }

  // Rescaling(1/255) first: the normalisation mirrorbench's data already has.
  void rescaling() {
    const auto scale = field("scale");
    const auto offset = field("offset");
    const bool first = out_.layers.empty();
    const bool by_255 = scale && scale->is_number() && std::fabs(scale->get<double>() * 255.0 - 1.0) < 1e-6;
    const bool no_offset = !offset || (offset->is_number() && offset->get<double>() == 0.0);
    if (!first || !by_255 || !no_offset)
      fail("only Rescaling(1/255) at the input is read (mirrorbench's data already is pixel / 255); other "
           "preprocessing belongs in the data");
    out_.notes.push_back("Rescaling(1/255) is the normalisation mirrorbench's data already has");
  }

  const std::vector<KerasLayer>& layers_;
  std::string_view origin_;
  const KerasLayer* at_ = nullptr;
  TranslatedModel out_;
  int folded_ = 0;
};

}  // namespace

void check_chain(const std::vector<KerasLayer>& layers, std::string_view origin) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const KerasLayer& l = layers[i];
    const std::string where = fmt::format("{}: model.layers[{}] '{}' ({})", origin, l.index, l.name, l.cls);
    if (i == 0) {
      MB_CHECK(l.inputs.empty(), ConfigError, "{}: the first layer reads {}: not a chain", where, fmt::join(l.inputs, ", "));
      continue;
    }
    MB_CHECK(l.node_count <= 1, ConfigError, "{} is called {} times: shared layers are not trained", where, l.node_count);
    MB_CHECK(l.inputs.size() == 1 && l.inputs[0] == layers[i - 1].name, ConfigError,
             "{} reads [{}], not the layer before it ('{}'): a functional model with branches; mirrorbench trains a "
             "chain of layers",
             where, fmt::join(l.inputs, ", "), layers[i - 1].name);
  }
}

TranslatedModel translate_layers(const std::vector<KerasLayer>& layers, std::string_view origin) {
  return Translator(layers, origin).run();
}

}  // namespace mb

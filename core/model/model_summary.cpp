// The layer table (see model_summary.h).
#include "model/model_summary.h"

#include <fmt/format.h>

#include "model/model_text.h"

namespace mb {
namespace {

// Keras's output shape: channels last, the batch as None.
std::string output_shape(const LayerShape& l) {
  return l.flat_out ? fmt::format("(None, {})", l.out.size())
                    : fmt::format("(None, {}, {}, {})", l.out.h, l.out.w, l.out.c);
}

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// The layer's settings under Keras's config names, so that a program can build the same network
// (bench/torch_model.py builds torch.nn modules from them) without reading the text form.
nlohmann::json keras_config(const Layer& layer) {
  const char* padding = layer.padding == Padding::Same ? "same" : "valid";
  const char* activation = layer.activation == Activation::Relu ? "relu" : "linear";
  switch (layer.kind) {
    case LayerKind::Conv2D:
      return {{"filters", layer.units}, {"kernel_size", {layer.kernel, layer.kernel}}, {"strides", {1, 1}},
              {"padding", padding}, {"activation", activation}, {"use_bias", layer.bias}};
    case LayerKind::Dense: return {{"units", layer.units}, {"activation", activation}, {"use_bias", layer.bias}};
    case LayerKind::MaxPool:
    case LayerKind::AvgPool: return {{"pool_size", {2, 2}}, {"strides", {2, 2}}, {"padding", padding}};
    case LayerKind::Dropout: return {{"rate", layer.rate}};
    case LayerKind::GlobalAvgPool:
    case LayerKind::Flatten: break;
  }
  return nlohmann::json::object();
}

}  // namespace

std::string model_summary_text(const ModelSpec& model, int64_t batch) {
  const ModelShape& m = model.shape();
  const std::string rule(72, '=');
  std::string out = fmt::format("Model: \"{}\"  (input {}x{}x{}, {} classes)\n", model.name(), m.input.h, m.input.w,
                                m.input.c, m.classes);
  out += fmt::format(" {:<34}{:<26}{:>10}\n{}\n", "Layer (type)", "Output Shape", "Param #", rule);
  for (const LayerShape& l : m.layers) {
    const std::string what = fmt::format("{} ({})", l.name, keras_class(l.layer.kind));
    out += fmt::format(" {:<34}{:<26}{:>10}\n", what, output_shape(l), grouped(l.param_count));
  }
  out += rule + "\n";
  out += fmt::format("Total params: {} ({:.2f} KB)\nTrainable params: {}\nNon-trainable params: 0\n",
                     grouped(m.param_count), double(m.param_count) * 4 / 1024, grouped(m.param_count));
  out += fmt::format("All-reduce per step: {:.3f} MB (every gradient, float32)\n", m.gradient_bytes() * 1e-6);
  out += fmt::format("Training arithmetic: {:.3f} MFLOP per image (forward, backward)\n",
                     m.train_flops_per_image * 1e-6);
  out += fmt::format("Memory per replica at batch {}: {:.1f} MB (parameters, gradients, Adam's moments, "
                     "activations and their gradients)\n",
                     batch, m.memory_bytes(batch) * 1e-6);
  out += fmt::format("Text: {}\n", model_text(model));
  return out;
}

nlohmann::json model_summary_json(const ModelSpec& model, int64_t batch) {
  const ModelShape& m = model.shape();
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerShape& l : m.layers) {
    nlohmann::json shape = nlohmann::json::array({nullptr});
    if (l.flat_out) shape.push_back(l.out.size());
    else shape.insert(shape.end(), {l.out.h, l.out.w, l.out.c});
    nlohmann::json params = nlohmann::json::array();
    for (int idx : {l.weight, l.bias})
      if (idx >= 0) {
        const ParamTensor& t = m.params[std::size_t(idx)];
        params.push_back({{"name", t.name},
                          {"shape", std::vector<int64_t>(t.shape.begin(), t.shape.begin() + t.rank)},
                          {"offset", t.offset}});
      }
    layers.push_back({{"name", l.name},
                      {"class", keras_class(l.layer.kind)},
                      {"word", layer_text(l.layer, &l == &m.layers.back())},
                      {"config", keras_config(l.layer)},
                      {"output_shape", shape},
                      {"params", l.param_count},
                      {"tensors", params}});
  }
  return {{"model", model.name()},
          {"text", model_text(model)},
          {"input_shape", {m.input.h, m.input.w, m.input.c}},
          {"classes", m.classes},
          {"layers", layers},
          {"total_params", m.param_count},
          {"allreduce_bytes", m.gradient_bytes()},
          {"train_flops_per_image", m.train_flops_per_image},
          {"batch", batch},
          {"memory_bytes_per_replica", m.memory_bytes(batch)}};
}

}  // namespace mb

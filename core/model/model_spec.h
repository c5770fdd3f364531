// The model a run trains, as a value: the CNN conv32-pool-conv64-pool-dense{N}-dense10 with
// the dense layer's width N. N = 64 is the reference CNN ("cnn-reference"), always the model
// of the reference experiment and the classic task; other widths are what-if models
// ("cnn-dense4096") that make the gradient all-reduce N/64 times as large, so communication
// can matter. Only the dense width varies: the conv widths are baked into kernels.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "model/cnn_shape.h"

namespace mb {

struct ModelSpec {
  int hidden = cnn::kReferenceHidden;   // the dense layer's width

  bool is_reference() const { return hidden == cnn::kReferenceHidden; }
  std::size_t param_count() const { return static_cast<std::size_t>(cnn::param_count(hidden)); }
  double gradient_bytes() const { return double(param_count()) * sizeof(float); }   // per all-reduce
  std::string name() const;   // "cnn-reference" or "cnn-dense{N}"
  bool operator==(const ModelSpec&) const = default;
};

// The widths a what-if model may have: 16384 is the widest in the field's reports
// (tensorflow#103564), 26.4 M parameters, 106 MB per all-reduce and ~0.5 GB of state per replica.
inline constexpr int kMinHidden = 1;
inline constexpr int kMaxHidden = 16384;

// The model whose flat buffer holds `count` floats (a checkpoint's), if a width gives it.
std::optional<ModelSpec> model_with_params(std::size_t count);

// The presets the GUI offers and the docs name (the reference first).
struct ModelPreset {
  std::string_view label;   // "dense 4096 (6.6 M parameters, 26 MB per all-reduce)"
  ModelSpec model;
};
std::span<const ModelPreset> model_presets();

// The option's text: "reference" or "dense:N" (model_from_text reads both, and the record's
// names "cnn-reference" / "cnn-denseN"); throws ConfigError naming --model otherwise.
std::string model_text(const ModelSpec& model);
ModelSpec model_from_text(std::string_view text);

}  // namespace mb

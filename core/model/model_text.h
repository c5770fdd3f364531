// The one-line text of a model, read once at the edge (--model, the GUI's field, records,
// checkpoints, calibrations) and written canonically:
//
//   [HxWxC:]layer-layer-...          e.g. 32x32x3:conv32@3s-conv32-pool-dense512-dense10
//
//   convF      Conv2D, F filters, 3x3, valid padding, ReLU, bias
//   convF@K    K x K (odd, 1..7), valid          convF@Ks   K x K, same padding
//   pool       MaxPooling2D 2x2 stride 2, valid  pool@s     TF-style same (odd sides round up)
//   avgpool    AveragePooling2D, likewise        avgpool@s
//   gap        GlobalAveragePooling2D            flatten    Flatten
//   denseN     Dense, N units: ReLU, but the last gives the logits (linear; softmax + cross-entropy)
//   dropP      Dropout of P per cent (P may have decimals: drop12.5)
//   _linear    after conv or a hidden dense: no ReLU;  _nobias: no bias
//
// The input is 28x28x1 unless a prefix says otherwise (the canonical text then omits it). A
// Dense on an image flattens it (C, H, W order), as PyTorch's nn.Flatten would.
//
// Presets: reference (conv32-pool-conv64-pool-dense64-dense10, the seed's CNN: always the model of
// the reference experiment and the classic task), dense:N (the reference with N dense units: the
// what-if models that make the all-reduce large), mlp, lenet5, cnn-cifar. The names records of
// schema 4 and older used ("cnn-reference", "cnn-denseN") read as their presets.
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "model/layer.h"
#include "model/model_spec.h"

namespace mb {

// The canonical text ("conv32-pool-conv64-pool-dense64-dense10"); model_from_text reads it back
// to an equal model.
std::string model_text(const ModelSpec& model);
// One layer's word; `last`: the model's last layer (whose Dense is linear by default).
std::string layer_text(const Layer& layer, bool last);

// Reads a preset name or a layer text. Throws ConfigError naming --model, the layer (its
// position and word) and why.
ModelSpec model_from_text(std::string_view text);

struct ModelPreset {
  std::string_view name;          // "reference", "mlp", "dense:4096"
  std::string_view text;          // its layers
  std::string_view about;         // one line for menus and help
};
// The named models, the reference first, then the dense what-ifs the window offers.
std::span<const ModelPreset> model_presets();

// The preset's name when `model` is one ("reference", "dense:4096", "lenet5"), else its text.
std::string model_name(const ModelSpec& model);

}  // namespace mb

// Keras layers, one by one, as mirrorbench layers (model/layer.h): what each Keras class and
// setting means here, and the refusals that say what would be needed. Used by keras_model.cpp
// once it has found the layer list; works on the parsed JSON, never on Python code.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/layer.h"

namespace mb {

struct KerasLayer {
  std::string cls;                    // "Conv2D"
  std::string name;                   // "conv2d_1"
  std::string registered_name;        // Keras 3: null for built-ins, "package>Class" for custom layers
  const nlohmann::json* config = nullptr;
  const nlohmann::json* build_config = nullptr;            // Keras 3: {"input_shape": [...]}
  const nlohmann::json* sequential_build_shape = nullptr;  // Sequential's build_input_shape (first layer only)
  int index = -1;                     // in Keras's model.layers (-1: a Sequential's InputLayer)
  int node_count = 0;                 // functional: how many times the layer is called
  std::vector<std::string> inputs;    // functional: the layers its one call reads
};

// A functional model's layers must form one chain, each calling the one before once.
// ConfigError naming the first layer that branches or joins.
void check_chain(const std::vector<KerasLayer>& layers, std::string_view origin);

struct TranslatedModel {
  ImageShape input;
  std::vector<Layer> layers;
  std::vector<std::string> notes;
};

// The input shape and the layers. ConfigError naming "model.layers[i] 'name' (Class)" and what
// would be needed, for anything the engines do not train.
TranslatedModel translate_layers(const std::vector<KerasLayer>& layers, std::string_view origin);

}  // namespace mb

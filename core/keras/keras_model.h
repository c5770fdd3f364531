// Keras model files read as mirrorbench models (model/model_spec.h): the architecture of a
// Sequential (or a Functional chain without branches) image classifier, from
//   - Keras 2 / tf.keras `model.to_json()` output (Keras <= 2.2's bare layer list included),
//   - a Keras 3 `.keras` file (a zip: its config.json, read with archive/zip_archive.h),
//   - that config.json on its own,
//   - a TensorFlow.js `model.json` (its modelTopology).
// Architecture only: weights, initializers and training configuration are ignored (the model
// trains from Keras's default initialisation) and the import's notes say so. What the engines
// cannot train is refused with a ConfigError naming the layer (its index in model.layers, its
// name and class) and what would be needed; nothing in a file is ever executed (a Lambda's
// marshalled bytecode is refused unread).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_spec.h"

namespace mb {

struct KerasImport {
  ModelSpec model;
  std::string format;               // "Keras 3 .keras file", "tf.keras 2.x JSON", ...
  std::string name;                 // the model's own name in the file
  std::vector<std::string> notes;   // what was read as what, and what was ignored
};

// Whether a --model value names a file rather than a layer text: a path (a '/' in it) or a
// name ending in .json, .keras or .h5. A layer text holds none of these.
bool names_model_file(std::string_view value);

// Reads a model file; `origin` names it in messages. ConfigError for what cannot be trained or
// is not a Keras model; DataError for an unreadable or hostile file.
KerasImport import_keras_file(const std::filesystem::path& path);
KerasImport import_keras_json(std::string_view json, std::string_view origin);
// A .keras archive's bytes (for tests and fuzzing; the file form reads the file through it).
KerasImport import_keras_archive(std::string bytes, std::string_view origin);

// A --model value: a model file (names_model_file) or a preset or layer text.
ModelSpec model_from_source(std::string_view value);

}  // namespace mb

// A model's layer table as Keras's model.summary() prints it (layer, output shape, parameters,
// totals) plus what matters for mirrored training: bytes per all-reduce, FLOPs per image and
// memory per replica at a batch size; and the same as JSON for programs.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_spec.h"

namespace mb {

std::string model_summary_text(const ModelSpec& model, int64_t batch);
nlohmann::json model_summary_json(const ModelSpec& model, int64_t batch);

}  // namespace mb

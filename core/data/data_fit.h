// Whether a data set fits a model: the model's input is the data's image shape, and the data's
// classes are among the model's logits.
#pragma once
#include <string>

#include "data/dataset.h"
#include "model/model_spec.h"

namespace mb {

// "" when `data` fits `model`, else why, naming both shapes (or both class counts).
std::string data_misfit(const Dataset& data, const ModelSpec& model);
// Throws DataError with data_misfit's words.
void check_data_fits(const Dataset& data, const ModelSpec& model);

}  // namespace mb

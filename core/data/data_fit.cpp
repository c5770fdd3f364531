// The data against the model's input and classes.
#include "data/data_fit.h"

#include <fmt/format.h>

#include "util/error.h"

namespace mb {

std::string data_misfit(const Dataset& data, const ModelSpec& model) {
  const ImageShape in = model.input();
  if (data.shape() != in)
    return fmt::format("data set '{}' has {}x{}x{} images (HxWxC), the model ({}) takes {}x{}x{}", data.name, data.rows,
                       data.cols, data.channels, model.name(), in.h, in.w, in.c);
  if (data.classes > model.classes())
    return fmt::format("data set '{}' has {} classes, the model ({}) has {} outputs", data.name, data.classes,
                       model.name(), model.classes());
  return {};
}

void check_data_fits(const Dataset& data, const ModelSpec& model) {
  if (const std::string why = data_misfit(data, model); !why.empty()) throw DataError(why);
}

}  // namespace mb

// The reference family's tensors by position, taken from the model's inferred layout.
#include "model/cnn_spec.h"

#include <algorithm>

#include "model/model_spec.h"
#include "util/error.h"

namespace mb::cnn {

ParamLayout param_layout(int hidden) {
  const ModelSpec model = reference_family(hidden);
  const auto& params = model.shape().params;
  MB_CHECK(params.size() == std::size_t(kNumParamTensors) && model.param_count() == std::size_t(param_count(hidden)),
           Error, "the reference family's layout has {} tensors, {} parameters", params.size(), model.param_count());
  ParamLayout out;
  std::copy(params.begin(), params.end(), out.begin());
  return out;
}

const ParamLayout& param_tensors() {
  static const ParamLayout layout = param_layout(kReferenceHidden);
  return layout;
}

}  // namespace mb::cnn

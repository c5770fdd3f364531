// The reference family (model_spec.h: conv32-pool-conv64-pool-denseN-dense10 on 28x28x1) as the
// own fused kernels see it: its parameter tensors by position. The layout itself is the
// model's (model_shape.h); this only names its eight tensors for kernels written for this shape.
#pragma once
#include <array>
#include <cstddef>

#include "model/cnn_shape.h"
#include "model/model_shape.h"

namespace mb::cnn {

enum ParamId : int { kConv1W, kConv1B, kConv2W, kConv2B, kFc1W, kFc1B, kFc2W, kFc2B, kNumParamTensors };

using ParamLayout = std::array<ParamTensor, kNumParamTensors>;

// The tensors of the reference family with `hidden` dense units (from its ModelShape).
ParamLayout param_layout(int hidden);
const ParamLayout& param_tensors();   // the reference model's (width kReferenceHidden)

// The reference model's parameter count, for code that is about the reference model only
// (tests, kernel benches); everything a run sizes asks its ModelSpec.
inline constexpr std::size_t kReferenceParams = static_cast<std::size_t>(kReferenceParamCount);

}  // namespace mb::cnn

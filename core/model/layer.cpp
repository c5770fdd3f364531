// Keras's names of the layers.
#include "model/layer.h"

namespace mb {

std::string_view keras_class(LayerKind kind) {
  switch (kind) {
    case LayerKind::Conv2D: return "Conv2D";
    case LayerKind::MaxPool: return "MaxPooling2D";
    case LayerKind::AvgPool: return "AveragePooling2D";
    case LayerKind::GlobalAvgPool: return "GlobalAveragePooling2D";
    case LayerKind::Flatten: return "Flatten";
    case LayerKind::Dense: return "Dense";
    case LayerKind::Dropout: return "Dropout";
  }
  return "Layer";
}

}  // namespace mb

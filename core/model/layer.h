// One layer of a model, as a value: the Keras layers the engines train (Conv2D, MaxPooling2D,
// AveragePooling2D, GlobalAveragePooling2D, Flatten, Dense, Dropout) with the settings they
// support. model/model_spec.h checks a list of them and infers every shape.
#pragma once
#include <cstdint>
#include <string_view>

namespace mb {

// One image (or one sample's activation) as the layers see it: C channels of H x W, stored
// C, H, W (PyTorch's order; a flat activation is 1 x 1 x units).
struct ImageShape {
  int h = 28, w = 28, c = 1;
  int64_t size() const { return int64_t(h) * w * c; }
  bool operator==(const ImageShape&) const = default;
};

enum class LayerKind { Conv2D, MaxPool, AvgPool, GlobalAvgPool, Flatten, Dense, Dropout };
enum class Padding { Valid, Same };        // TF's words: same keeps the size (stride 1) or rounds up (pools)
enum class Activation { Linear, Relu };

struct Layer {
  LayerKind kind = LayerKind::Dense;
  int units = 0;                             // Conv2D: filters; Dense: units
  int kernel = 0;                            // Conv2D: odd K in 1..7 (K x K, stride 1)
  Padding padding = Padding::Valid;          // Conv2D, MaxPool, AvgPool (2 x 2, stride 2)
  Activation activation = Activation::Relu;  // Conv2D, Dense
  bool bias = true;                          // Conv2D, Dense
  double rate = 0;                           // Dropout: the fraction dropped, in [0, 1)

  bool operator==(const Layer&) const = default;
  bool has_params() const { return kind == LayerKind::Conv2D || kind == LayerKind::Dense; }

  static Layer conv(int filters, int kernel = 3, Padding padding = Padding::Valid,
                    Activation activation = Activation::Relu, bool bias = true) {
    return {LayerKind::Conv2D, filters, kernel, padding, activation, bias, 0};
  }
  // Layers without parameters are linear and have no bias, so equal layers compare equal.
  static Layer max_pool(Padding padding = Padding::Valid) { return plain(LayerKind::MaxPool, padding); }
  static Layer avg_pool(Padding padding = Padding::Valid) { return plain(LayerKind::AvgPool, padding); }
  static Layer global_avg_pool() { return plain(LayerKind::GlobalAvgPool); }
  static Layer flatten() { return plain(LayerKind::Flatten); }
  static Layer dense(int units, Activation activation = Activation::Relu, bool bias = true) {
    return {LayerKind::Dense, units, 0, Padding::Valid, activation, bias, 0};
  }
  static Layer dropout(double rate) {
    Layer l = plain(LayerKind::Dropout);
    l.rate = rate;
    return l;
  }

 private:
  static Layer plain(LayerKind kind, Padding padding = Padding::Valid) {
    return {kind, 0, 0, padding, Activation::Linear, false, 0};
  }
};

// Keras's class name: "Conv2D", "MaxPooling2D", ...
std::string_view keras_class(LayerKind kind);

}  // namespace mb

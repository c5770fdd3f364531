// The model a run trains, as a value: the input's shape and a list of layers (model/layer.h),
// checked and with every shape inferred when it is made (model/model_shape.h). Typed
// everywhere inside the core; its words (model/model_text.h) are read once, at the edge.
// The default is the reference CNN, conv32-pool-conv64-pool-dense64-dense10 on 28x28x1.
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/layer.h"
#include "model/model_shape.h"

namespace mb {

class ModelSpec {
 public:
  ModelSpec();   // the reference CNN
  // Throws ConfigError naming the layer and why (infer_shape).
  ModelSpec(const ImageShape& input, std::vector<Layer> layers);

  const ImageShape& input() const { return shape_->input; }
  const std::vector<Layer>& layers() const { return layers_; }
  const ModelShape& shape() const { return *shape_; }
  int classes() const { return shape_->classes; }
  std::size_t param_count() const { return shape_->param_count; }
  double gradient_bytes() const { return shape_->gradient_bytes(); }   // per all-reduce
  double train_flops_per_image() const { return shape_->train_flops_per_image; }

  std::string text() const;   // canonical (model/model_text.h)
  std::string name() const;   // the preset's name ("reference", "dense:4096", "mlp"), else text()
  bool is_reference() const;

  bool operator==(const ModelSpec& o) const { return input() == o.input() && layers_ == o.layers_; }

 private:
  std::vector<Layer> layers_;
  std::shared_ptr<const ModelShape> shape_;   // shared: copies of a model are cheap
};

// The reference family: conv32-pool-conv64-pool-denseN-dense10 on 28x28x1 with every default,
// the network the own fused kernels (CPU and GPU) were written for. Its dense width N, or
// nullopt for any other model.
std::optional<int> reference_family_width(const ModelSpec& model);
// The reference CNN with N dense units (N = 64: the reference itself).
ModelSpec reference_family(int width);
// The family's model whose flat buffer holds `count` floats, if a width gives it: how files
// written before models were layer lists (calibrations, checkpoints) name their model.
std::optional<ModelSpec> reference_family_with_params(std::size_t count);
inline constexpr int kReferenceWidth = 64;

}  // namespace mb

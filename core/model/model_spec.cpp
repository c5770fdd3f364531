// The model value: made from a layer list (checked and shaped once), the reference family.
#include "model/model_spec.h"

#include "model/model_text.h"

namespace mb {
namespace {

std::vector<Layer> reference_layers(int width) {
  return {Layer::conv(32), Layer::max_pool(), Layer::conv(64), Layer::max_pool(), Layer::dense(width),
          Layer::dense(10, Activation::Linear)};
}

}  // namespace

ModelSpec::ModelSpec() {
  // Every default-made model shares one inferred shape.
  static const std::shared_ptr<const ModelShape> reference =
      std::make_shared<const ModelShape>(infer_shape(ImageShape{}, reference_layers(kReferenceWidth)));
  layers_ = reference_layers(kReferenceWidth);
  shape_ = reference;
}

ModelSpec::ModelSpec(const ImageShape& input, std::vector<Layer> layers)
    : layers_(std::move(layers)), shape_(std::make_shared<const ModelShape>(infer_shape(input, layers_))) {}

std::string ModelSpec::text() const { return model_text(*this); }
std::string ModelSpec::name() const { return model_name(*this); }
bool ModelSpec::is_reference() const { return reference_family_width(*this) == kReferenceWidth; }

std::optional<ModelSpec> reference_family_with_params(std::size_t count) {
  const ModelSpec one = reference_family(1), two = reference_family(2);
  const std::size_t fixed = 2 * one.param_count() - two.param_count(), per = two.param_count() - one.param_count();
  if (count < fixed + per || (count - fixed) % per != 0 || (count - fixed) / per > std::size_t(kMaxUnits))
    return std::nullopt;
  return reference_family(int((count - fixed) / per));
}

std::optional<int> reference_family_width(const ModelSpec& model) {
  const auto& l = model.layers();
  if (model.input() != ImageShape{} || l.size() != 6 || l[4].kind != LayerKind::Dense) return std::nullopt;
  const std::vector<Layer> family = reference_layers(l[4].units);
  if (l != family) return std::nullopt;
  return l[4].units;
}

ModelSpec reference_family(int width) { return ModelSpec(ImageShape{}, reference_layers(width)); }

}  // namespace mb

// Names, presets and the text form of the model description.
#include "model/model_spec.h"

#include <charconv>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {

std::string ModelSpec::name() const { return is_reference() ? "cnn-reference" : fmt::format("cnn-dense{}", hidden); }

std::span<const ModelPreset> model_presets() {
  static const ModelPreset kPresets[] = {
      {"reference (dense 64, 0.12 M parameters, 0.49 MB per all-reduce)", ModelSpec{}},
      {"what-if: dense 1024 (1.7 M parameters, 6.7 MB per all-reduce)", ModelSpec{1024}},
      {"what-if: dense 4096 (6.6 M parameters, 26 MB per all-reduce)", ModelSpec{4096}},
      {"what-if: dense 8192 (13 M parameters, 53 MB per all-reduce)", ModelSpec{8192}},
  };
  return kPresets;
}

std::optional<ModelSpec> model_with_params(std::size_t count) {
  const auto base = std::size_t(cnn::param_count(0)), per = std::size_t(cnn::param_count(1)) - base;
  if (count <= base || (count - base) % per != 0) return std::nullopt;
  const std::size_t hidden = (count - base) / per;
  if (hidden < std::size_t(kMinHidden) || hidden > std::size_t(kMaxHidden)) return std::nullopt;
  return ModelSpec{int(hidden)};
}

std::string model_text(const ModelSpec& model) {
  return model.is_reference() ? "reference" : fmt::format("dense:{}", model.hidden);
}

ModelSpec model_from_text(std::string_view text) {
  if (text == "reference" || text == "cnn-reference") return {};
  std::string_view width;
  for (std::string_view prefix : {"dense:", "cnn-dense"})
    if (text.starts_with(prefix)) width = text.substr(prefix.size());
  int n = 0;
  const auto [end, ec] = std::from_chars(width.data(), width.data() + width.size(), n);
  if (width.empty() || ec != std::errc{} || end != width.data() + width.size())
    throw ConfigError(fmt::format("--model: '{}' is not a model (use 'reference' or 'dense:N', N in {}..{})", text,
                                  kMinHidden, kMaxHidden));
  if (n < kMinHidden || n > kMaxHidden)
    throw ConfigError(fmt::format("--model: a dense width of {} is out of range (must be in {}..{})", n, kMinHidden,
                                  kMaxHidden));
  return ModelSpec{n};
}

}  // namespace mb

// The model's one-line text: reading (presets, layer words) and the canonical writing.
#include "model/model_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {
namespace {

constexpr ModelPreset kPresets[] = {
    {"reference", "conv32-pool-conv64-pool-dense64-dense10",
     "the reference CNN (0.12 M parameters, 0.49 MB per all-reduce): the classic task's model"},
    {"dense:1024", "conv32-pool-conv64-pool-dense1024-dense10",
     "what-if: dense 1024 (1.7 M parameters, 6.7 MB per all-reduce)"},
    {"dense:4096", "conv32-pool-conv64-pool-dense4096-dense10",
     "what-if: dense 4096 (6.6 M parameters, 26 MB per all-reduce)"},
    {"dense:8192", "conv32-pool-conv64-pool-dense8192-dense10",
     "what-if: dense 8192 (13 M parameters, 53 MB per all-reduce)"},
    {"mlp", "dense256-dense128-dense64-dense10", "a multilayer perceptron 256-128-64 (0.24 M parameters)"},
    {"lenet5", "conv6@5s-pool-conv16@5-pool-dense120-dense84-dense10", "LeNet-5 with ReLU and max pooling (62 k parameters)"},
    {"cnn-cifar", "32x32x3:conv32@3s-conv32-pool-conv64@3s-conv64-pool-dense512-dense10",
     "Keras's CIFAR-10 CNN without dropout, on 32x32 colour images (1.25 M parameters)"},
};

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
  throw ConfigError(fmt::format("--model '{}': {}", text, why));
}

// A whole decimal number in `digits` (no sign, no spaces), or -1.
int64_t whole(std::string_view digits) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() || v < 0) return -1;
  return v;
}

std::string_view take_prefix(std::string_view& word, std::string_view prefix) {
  if (!word.starts_with(prefix)) return {};
  word.remove_prefix(prefix.size());
  return prefix;
}

// "HxWxC" -> shape, throwing on anything else.
ImageShape read_input(std::string_view full, std::string_view shape) {
  ImageShape s;
  int* fields[] = {&s.h, &s.w, &s.c};
  for (int i = 0; i < 3; ++i) {
    const std::size_t x = i < 2 ? shape.find('x') : shape.size();
    const int64_t v = x == std::string_view::npos ? -1 : whole(shape.substr(0, x));
    if (v < 1 || v > 1 << 20) refuse(full, fmt::format("the input '{}' is not HxWxC (e.g. 32x32x3)", shape));
    *fields[i] = int(v);
    if (i < 2) shape.remove_prefix(x + 1);
  }
  return s;
}

// One layer word; `position` counts from 1 for messages.
Layer read_layer(std::string_view full, std::string_view word, int position) {
  const std::string_view original = word;
  auto fail = [&](const std::string& why) {
    refuse(full, fmt::format("layer {} ('{}'): {}", position, original, why));
  };
  // Flags after '_': linear, nobias.
  bool linear = false, nobias = false;
  for (std::size_t u = word.rfind('_'); u != std::string_view::npos; u = word.rfind('_')) {
    const std::string_view flag = word.substr(u + 1);
    if (flag == "linear") linear = true;
    else if (flag == "nobias") nobias = true;
    else fail(fmt::format("'_{}' is not a flag (_linear, _nobias)", flag));
    word = word.substr(0, u);
  }
  std::string_view suffix;
  if (const std::size_t at = word.find('@'); at != std::string_view::npos) {
    suffix = word.substr(at + 1);
    word = word.substr(0, at);
  }
  auto no_flags = [&](const char* what) {
    if (linear || nobias) fail(fmt::format("{} has no activation or bias to set", what));
  };
  if (take_prefix(word, "conv").size()) {
    const int64_t filters = whole(word);
    if (filters < 1) fail("conv needs its filter count: convF, convF@K or convF@Ks");
    int64_t k = 3;
    Padding padding = Padding::Valid;
    if (!suffix.empty()) {
      if (suffix.ends_with('s')) padding = Padding::Same, suffix.remove_suffix(1);
      k = whole(suffix);
      if (k < 1) fail("the kernel after '@' must be a number: conv32@5 or conv32@5s");
    }
    return Layer::conv(int(std::min<int64_t>(filters, 1 << 30)), int(std::min<int64_t>(k, 1 << 30)), padding,
                       linear ? Activation::Linear : Activation::Relu, !nobias);
  }
  if (word == "pool" || word == "avgpool") {
    no_flags("a pooling");
    if (!suffix.empty() && suffix != "s") fail("a pooling is 2x2 with stride 2; '@s' asks for same padding");
    const Padding p = suffix == "s" ? Padding::Same : Padding::Valid;
    return word == "pool" ? Layer::max_pool(p) : Layer::avg_pool(p);
  }
  if (!suffix.empty()) fail("only conv and the poolings take '@'");
  if (word == "gap") return no_flags("gap"), Layer::global_avg_pool();
  if (word == "flatten") return no_flags("flatten"), Layer::flatten();
  if (take_prefix(word, "dense").size()) {
    const int64_t units = whole(word);
    if (units < 1) fail("dense needs its unit count: denseN");
    return Layer::dense(int(std::min<int64_t>(units, 1 << 30)), linear ? Activation::Linear : Activation::Relu, !nobias);
  }
  if (take_prefix(word, "drop").size()) {
    no_flags("a dropout");
    double percent = -1;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), percent);
    if (word.empty() || ec != std::errc{} || end != word.data() + word.size() || !(percent >= 0 && percent < 100))
      fail("dropP needs P, the per cent dropped, at least 0 and below 100");
    return Layer::dropout(percent / 100.0);
  }
  fail("not a layer (convF, convF@K, convF@Ks, pool, avgpool, gap, flatten, denseN, dropP)");
  return {};
}

// A dropout's per cent as written: the shortest fixed-point decimal P that reads back to the
// same rate (P / 100), so that the text gives the model back; never an exponent, whose '-' would
// split the layer. rate * 100 may be an ulp or two off the P that was read: its neighbours count.
std::string percent_text(double rate) {
  const auto reads_back = [rate](const std::string& t) {
    double p = -1;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), p);
    return ec == std::errc{} && end == t.data() + t.size() && p / 100 == rate;
  };
  const double p = rate * 100;
  const double down = std::nextafter(p, 0.0), up = std::nextafter(p, 100.0);
  const double near[] = {p, down, up, std::nextafter(down, 0.0), std::nextafter(up, 100.0)};
  for (int decimals = 0; decimals <= 340; ++decimals)   // 2.2e-308 needs 325 for 17 digits
    for (double q : near)
      if (std::string t = fmt::format("{:.{}f}", q, decimals); reads_back(t)) return t;
  return fmt::format("{:.17f}", p);   // a rate no per cent gives (not read from a text)
}

const ModelPreset* find_preset(std::string_view name) {
  for (const ModelPreset& p : kPresets)
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

std::span<const ModelPreset> model_presets() { return kPresets; }

std::string layer_text(const Layer& l, bool last) {
  std::string out;
  switch (l.kind) {
    case LayerKind::Conv2D:
      out = fmt::format("conv{}", l.units);
      if (l.kernel != 3 || l.padding == Padding::Same)
        out += fmt::format("@{}{}", l.kernel, l.padding == Padding::Same ? "s" : "");
      if (l.activation == Activation::Linear) out += "_linear";
      break;
    case LayerKind::MaxPool: return l.padding == Padding::Same ? "pool@s" : "pool";
    case LayerKind::AvgPool: return l.padding == Padding::Same ? "avgpool@s" : "avgpool";
    case LayerKind::GlobalAvgPool: return "gap";
    case LayerKind::Flatten: return "flatten";
    case LayerKind::Dense:
      out = fmt::format("dense{}", l.units);
      // The last dense is linear by default (the logits); a hidden one has a ReLU.
      if (!last && l.activation == Activation::Linear) out += "_linear";
      break;
    case LayerKind::Dropout: return "drop" + percent_text(l.rate);
  }
  if (!l.bias) out += "_nobias";
  return out;
}

std::string model_text(const ModelSpec& model) {
  std::string out;
  if (model.input() != ImageShape{}) out = fmt::format("{}x{}x{}:", model.input().h, model.input().w, model.input().c);
  const auto& layers = model.layers();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i) out += '-';
    out += layer_text(layers[i], i + 1 == layers.size());
  }
  return out;
}

ModelSpec model_from_text(std::string_view text) {
  // Presets, and the names older records used.
  if (const ModelPreset* p = find_preset(text)) return model_from_text(p->text);
  if (text == "cnn-reference") return reference_family(kReferenceWidth);
  for (std::string_view prefix : {"dense:", "cnn-dense"}) {
    if (!text.starts_with(prefix)) continue;
    const int64_t n = whole(text.substr(prefix.size()));
    if (n < 1 || n > kMaxUnits)
      refuse(text, fmt::format("a dense width must be a number in 1..{}", kMaxUnits));
    return reference_family(int(n));
  }
  if (text.empty()) refuse(text, "empty; give a preset (reference, mlp, lenet5, cnn-cifar, dense:N) or layers");
  std::string_view rest = text;
  ImageShape input;
  if (const std::size_t colon = rest.find(':'); colon != std::string_view::npos) {
    input = read_input(text, rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  std::vector<Layer> layers;
  while (!rest.empty() || layers.empty()) {
    const std::size_t dash = rest.find('-');
    const std::string_view word = rest.substr(0, dash);
    if (word.empty()) refuse(text, fmt::format("layer {} is empty (two '-' in a row, or one at an end)", layers.size() + 1));
    layers.push_back(read_layer(text, word, int(layers.size()) + 1));
    if (dash == std::string_view::npos) break;
    rest.remove_prefix(dash + 1);
    if (rest.empty()) refuse(text, "it ends with '-'");
    if (layers.size() > 256) refuse(text, "more than 256 layers");
  }
  // The last dense gives the logits: linear unless said otherwise (a ReLU there is refused).
  if (layers.back().kind == LayerKind::Dense) layers.back().activation = Activation::Linear;
  try {
    return ModelSpec(input, std::move(layers));
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{} (in '{}')", e.what(), text));
  }
}

std::string model_name(const ModelSpec& model) {
  if (const std::optional<int> width = reference_family_width(model))
    return *width == kReferenceWidth ? "reference" : fmt::format("dense:{}", *width);
  const std::string text = model_text(model);
  for (const ModelPreset& p : kPresets)
    if (p.text == text) return std::string(p.name);
  return text;
}

}  // namespace mb

// Synthetic images of any shape (see synthetic.h).
#include "data/synthetic.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/model_shape.h"
#include "util/error.h"
#include "util/random.h"

namespace mb {
namespace {

constexpr int64_t kTrainImages = 60000, kValImages = 10000;
constexpr int64_t kMaxBytes = int64_t(512) << 20;

int whole(std::string_view digits) {
  int v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() ? -1 : v;
}

[[noreturn]] void refuse(std::string_view source, std::string_view why) {
  throw ConfigError(fmt::format("--data '{}': {} (synthetic:HxWxC or synthetic:HxWxC:CLASSES, e.g. synthetic:32x32x3:10)",
                                source, why));
}

// A smooth template per class: per channel a triangle wave across the plane, of seeded
// frequencies and phase, in 0..1 (exactly rounded operations only, see synthetic.h).
std::vector<float> class_template(const SyntheticSpec& s, int label) {
  SplitMix64 rng(0x5EEDull * 977 + uint64_t(label) * 0x9E3779B97F4A7C15ull);
  std::vector<float> t(std::size_t(s.shape.size()));
  for (int c = 0; c < s.shape.c; ++c) {
    const double fy = 0.5 + 3.0 * rng.next_unit(), fx = 0.5 + 3.0 * rng.next_unit(), phase = rng.next_unit();
    for (int y = 0; y < s.shape.h; ++y)
      for (int x = 0; x < s.shape.w; ++x) {
        const double u = fy * y / s.shape.h + fx * x / s.shape.w + phase;
        const double v = 4.0 * std::fabs(u - std::floor(u) - 0.5) - 1.0;
        t[(std::size_t(c) * s.shape.h + y) * s.shape.w + x] = float(0.5 + 0.5 * v);
      }
  }
  return t;
}

}  // namespace

std::optional<SyntheticSpec> parse_synthetic_source(std::string_view source) {
  if (!source.starts_with(kSyntheticPrefix)) return std::nullopt;
  std::string_view rest = source.substr(kSyntheticPrefix.size());
  SyntheticSpec s;
  const std::size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    s.classes = whole(rest.substr(colon + 1));
    if (s.classes < 2 || s.classes > kMaxClasses) refuse(source, fmt::format("the class count must be 2..{}", kMaxClasses));
    rest = rest.substr(0, colon);
  }
  int* fields[] = {&s.shape.h, &s.shape.w, &s.shape.c};
  for (int i = 0; i < 3; ++i) {
    const std::size_t x = i < 2 ? rest.find('x') : rest.size();
    if (x == std::string_view::npos) refuse(source, "the shape is not HxWxC");
    *fields[i] = whole(rest.substr(0, x));
    if (*fields[i] < 1) refuse(source, "the shape is not HxWxC");
    rest.remove_prefix(i < 2 ? x + 1 : x);
  }
  if (s.shape.h > kMaxImageSide || s.shape.w > kMaxImageSide || s.shape.c > kMaxChannels)
    refuse(source, fmt::format("sides up to {} and up to {} channels", kMaxImageSide, kMaxChannels));
  return s;
}

std::string synthetic_source(const SyntheticSpec& s) {
  return fmt::format("{}{}x{}x{}:{}", kSyntheticPrefix, s.shape.h, s.shape.w, s.shape.c, s.classes);
}

Dataset make_synthetic_images(const SyntheticSpec& s, int64_t count, uint64_t seed, std::string name) {
  Dataset d;
  d.name = std::move(name);
  d.count = count;
  d.rows = s.shape.h;
  d.cols = s.shape.w;
  d.channels = s.shape.c;
  d.classes = s.classes;
  const std::size_t per = std::size_t(d.pixels_per_image());
  d.pixels.resize(std::size_t(count) * per);
  d.labels.resize(std::size_t(count));
  std::vector<std::vector<float>> templates;
  for (int k = 0; k < s.classes; ++k) templates.push_back(class_template(s, k));
  SplitMix64 rng(seed);
  for (int64_t i = 0; i < count; ++i) {   // three draws for the label, then one per pixel
    const int label = int(rng.below(uint64_t(s.classes)));
    const bool relabelled = rng.next_unit() < kSyntheticRelabelled;
    const int drawn = int(rng.below(uint64_t(s.classes)));
    d.labels[std::size_t(i)] = uint8_t(relabelled ? drawn : label);
    const std::vector<float>& t = templates[std::size_t(label)];
    uint8_t* img = d.pixels.data() + std::size_t(i) * per;
    for (std::size_t p = 0; p < per; ++p) {
      const double v = 72.0 * t[p] + 183.0 * rng.next_unit();   // the class's pattern under heavy noise
      img[p] = uint8_t(std::clamp(v, 0.0, 255.0));
    }
  }
  return d;
}

DataSplit make_synthetic_split(const SyntheticSpec& s) {
  const int64_t per = s.shape.size();
  const int64_t train = std::max<int64_t>(1, std::min(kTrainImages, kMaxBytes * 6 / 7 / per));
  const int64_t val = std::max<int64_t>(1, std::min(kValImages, train / 6));
  DataSplit out;
  out.name = fmt::format("synthetic-{}x{}x{}-{}", s.shape.h, s.shape.w, s.shape.c, s.classes);
  out.dir = synthetic_source(s);
  out.train = make_synthetic_images(s, train, 0x7261696Eull, out.name + "/train");
  out.val = make_synthetic_images(s, val, 0x76616C00ull, out.name + "/val");
  return out;
}

}  // namespace mb

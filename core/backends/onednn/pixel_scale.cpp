// uint8 -> x/255 for every SIMD target (see pixel_scale.h). Why vectors: at the dense models'
// pace (a step of ~1 ms) the scalar table lookup per pixel was ~4 % of a CPU replica's time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/pixel_scale.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "backends/onednn/pixel_scale.h"

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Returns how many leading pixels it converted (whole vectors of floats).
std::size_t scale_pixel_vectors(const uint8_t* src, float* dst, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<uint8_t, decltype(df)> du8;
  const std::size_t lanes = hn::Lanes(df);
  const auto k255 = hn::Set(df, 255.0f);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto wide = hn::PromoteTo(di, hn::LoadU(du8, src + i));
    hn::StoreU(hn::Div(hn::ConvertTo(df, wide), k255), df, dst + i);
  }
  return i;
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(scale_pixel_vectors);

void scale_pixels(const uint8_t* src, float* dst, std::size_t n) {
  const std::size_t done = HWY_DYNAMIC_DISPATCH(scale_pixel_vectors)(src, dst, n);
  for (std::size_t i = done; i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

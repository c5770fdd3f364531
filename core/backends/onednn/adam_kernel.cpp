// Adam for every SIMD target (see adam_kernel.h). This file is compiled with -ffp-contract=off
// (core/CMakeLists.txt): GCC would otherwise fuse Highway's separate Mul and Add into an FMA
// on the targets that have one, rounding once instead of twice, and break the bit-equality
// with the reference on exactly those machines.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/adam_kernel.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cstddef>

#include "backends/onednn/adam_kernel.h"
#include "backends/onednn/simd_target.h"
#include "util/error.h"

HWY_BEFORE_NAMESPACE();
namespace mb::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Mirrors optim/adam.cpp term by term: m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g;
// w -= (lr_t*m) / (sqrt(v) + eps). Returns how many leading elements it updated (whole vectors).
std::size_t adam_vectors(float lr_t, float beta1, float beta2, float epsilon, float* w, const float* g, float* m,
                         float* v, std::size_t n) {
  const hn::ScalableTag<float> d;
  const std::size_t lanes = hn::Lanes(d);
  const auto b1 = hn::Set(d, beta1), b2 = hn::Set(d, beta2), eps = hn::Set(d, epsilon);
  const auto omb1 = hn::Set(d, 1.0f - beta1), omb2 = hn::Set(d, 1.0f - beta2), lr = hn::Set(d, lr_t);
  std::size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto gi = hn::LoadU(d, g + i);
    const auto mi = hn::Add(hn::Mul(b1, hn::LoadU(d, m + i)), hn::Mul(omb1, gi));
    const auto vi = hn::Add(hn::Mul(b2, hn::LoadU(d, v + i)), hn::Mul(hn::Mul(omb2, gi), gi));
    hn::StoreU(mi, d, m + i);
    hn::StoreU(vi, d, v + i);
    const auto step = hn::Div(hn::Mul(lr, mi), hn::Add(hn::Sqrt(vi), eps));
    hn::StoreU(hn::Sub(hn::LoadU(d, w + i), step), d, w + i);
  }
  return i;
}

}  // namespace mb::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mb::onednn {

HWY_EXPORT(adam_vectors);

void adam_update(const AdamConfig& cfg, int64_t step, std::span<float> weights, std::span<const float> grads,
                 std::span<float> m, std::span<float> v) {
  MB_CHECK(grads.size() == weights.size() && m.size() == weights.size() && v.size() == weights.size(), Error,
           "Adam buffers differ in length: weights {}, grads {}, m {}, v {}", weights.size(), grads.size(), m.size(),
           v.size());
  const std::size_t done =
      HWY_DYNAMIC_DISPATCH(adam_vectors)(adam_step_size(cfg, step), cfg.beta1, cfg.beta2, cfg.epsilon, weights.data(),
                                         grads.data(), m.data(), v.data(), weights.size());
  // The tail (fewer elements than one vector): the reference loop itself.
  if (done < weights.size())
    adam_update_reference(cfg, step, weights.subspan(done), grads.subspan(done), m.subspan(done), v.subspan(done));
}

}  // namespace mb::onednn
#endif  // HWY_ONCE

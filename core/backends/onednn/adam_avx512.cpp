// AVX-512 Adam (see adam_avx512.h); falls back to the reference loop elsewhere.
#include "backends/onednn/adam_avx512.h"

#include <cstddef>

#include "util/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* idiom.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#define MB_ADAM_AVX512 1
#endif

namespace mb::onednn {
namespace {

#ifdef MB_ADAM_AVX512
// Mirrors optim/adam.cpp term by term: m = b1*m + (1-b1)*g; v = b2*v + ((1-b2)*g)*g;
// w -= (lr_t*m) / (sqrt(v) + eps). The explicit-rounding forms keep GCC from contracting a
// multiply and an add into an FMA, which rounds once instead of twice and would break
// bit-equality with the reference.
#define MB_MUL(a, b) _mm512_mul_round_ps(a, b, _MM_FROUND_CUR_DIRECTION)
#define MB_ADD(a, b) _mm512_add_round_ps(a, b, _MM_FROUND_CUR_DIRECTION)
__attribute__((target("avx512f"))) std::size_t adam_avx512(float lr_t, const AdamConfig& cfg, float* w,
                                                          const float* g, float* m, float* v, std::size_t n) {
  const __m512 b1 = _mm512_set1_ps(cfg.beta1), b2 = _mm512_set1_ps(cfg.beta2), eps = _mm512_set1_ps(cfg.epsilon);
  const __m512 omb1 = _mm512_set1_ps(1.0f - cfg.beta1), omb2 = _mm512_set1_ps(1.0f - cfg.beta2);
  const __m512 lr = _mm512_set1_ps(lr_t);
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    const __m512 mi = MB_ADD(MB_MUL(b1, _mm512_loadu_ps(m + i)), MB_MUL(omb1, gi));
    const __m512 vi = MB_ADD(MB_MUL(b2, _mm512_loadu_ps(v + i)), MB_MUL(MB_MUL(omb2, gi), gi));
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    const __m512 step = _mm512_div_ps(MB_MUL(lr, mi), MB_ADD(_mm512_sqrt_ps(vi), eps));
    _mm512_storeu_ps(w + i, _mm512_sub_ps(_mm512_loadu_ps(w + i), step));
  }
  return i;
}
#undef MB_MUL
#undef MB_ADD
#endif

}  // namespace

void adam_update(const AdamConfig& cfg, int64_t step, std::span<float> weights, std::span<const float> grads,
                 std::span<float> m, std::span<float> v) {
  MB_CHECK(grads.size() == weights.size() && m.size() == weights.size() && v.size() == weights.size(), Error,
           "Adam buffers differ in length: weights {}, grads {}, m {}, v {}", weights.size(), grads.size(), m.size(),
           v.size());
  std::size_t done = 0;
#ifdef MB_ADAM_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512)
    done = adam_avx512(adam_step_size(cfg, step), cfg, weights.data(), grads.data(), m.data(), v.data(),
                       weights.size());
#endif
  // The tail (and everything on CPUs without AVX-512): the reference loop itself.
  if (done < weights.size())
    adam_update_reference(cfg, step, weights.subspan(done), grads.subspan(done), m.subspan(done), v.subspan(done));
}

}  // namespace mb::onednn

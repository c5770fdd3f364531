// Run-time choice of the Highway target for the CPU kernels (see simd_target.h), through
// Highway's own dispatch state: DisableTargets narrows what HWY_DYNAMIC_DISPATCH may pick.
#include "backends/onednn/simd_target.h"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>
#include <hwy/targets.h>

#include "util/error.h"

namespace mb::onednn {
namespace {

std::string target_name(int64_t bit) {
  std::string s = hwy::TargetName(bit);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What the CPU runs, detected once before anything narrows the choice (SupportedTargets
// reports the narrowed set afterwards).
int64_t cpu_targets() {
  static const int64_t bits = [] {
    hwy::DisableTargets(0);
    return hwy::SupportedTargets();
  }();
  return bits;
}

// The targets compiled into this file are those compiled into the kernels: same flags, same
// HWY_TARGETS. Lowest bit = best target.
template <typename F>
void for_each_compiled(F&& f) {
  for (int64_t bits = HWY_TARGETS; bits != 0; bits &= bits - 1) f(bits & -bits);
}

std::string joined_names(bool supported_only) {
  std::string out;
  for_each_compiled([&](int64_t bit) {
    if (supported_only && !(cpu_targets() & bit)) return;
    out += (out.empty() ? "" : ", ") + target_name(bit);
  });
  return out;
}

// Throws with `origin` (the option or the call) in the message.
void narrow_to(std::string_view name, const std::string& origin) {
  cpu_targets();
  if (name.empty() || name == "auto" || name == "AUTO") {
    hwy::DisableTargets(0);
    return;
  }
  std::string wanted(name);   // any case, like ONEDNN_MAX_CPU_ISA=AVX2
  for (char& c : wanted) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (wanted == "avx512") wanted = "avx3";
  int64_t found = 0;
  for_each_compiled([&](int64_t bit) {
    if (target_name(bit) == wanted) found = bit;
  });
  MB_CHECK(found != 0, ConfigError, "{}: unknown SIMD target; the kernels were built for {} (or auto)", origin,
           joined_names(false));
  MB_CHECK(cpu_targets() & found, ConfigError, "{}: this CPU cannot run {}; it runs {}", origin, wanted,
           joined_names(true));
  // Everything but the one target; Highway keeps its scalar fallback in the table regardless.
  hwy::DisableTargets(~found);
}

}  // namespace

std::vector<SimdTarget> simd_targets() {
  std::vector<SimdTarget> out;
  for_each_compiled([&](int64_t bit) { out.push_back({target_name(bit), (cpu_targets() & bit) != 0}); });
  return out;
}

std::string simd_target() {
  cpu_targets();
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  return target_name(usable & -usable);
}

void force_simd_target(std::string_view name) { narrow_to(name, fmt::format("--simd-target {}", name)); }

}  // namespace mb::onednn

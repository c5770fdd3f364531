// The compute backends by name: an enum for code that decides on a backend, the words
// ("reference", "onednn", "cuda") for run records, settings, flags and display.
#pragma once
#include <optional>
#include <string_view>

namespace mb {

enum class Backend { Reference, OneDnn, Cuda };

inline constexpr Backend kAllBackends[] = {Backend::Reference, Backend::OneDnn, Backend::Cuda};

constexpr std::string_view to_string(Backend backend) {
  switch (backend) {
    case Backend::Reference: return "reference";
    case Backend::OneDnn: return "onednn";
    case Backend::Cuda: return "cuda";
  }
  return "reference";   // not reached: every enumerator is handled above
}

// "reference", "onednn", "cuda"; nullopt for anything else ("auto" is a choice, not a backend:
// resolve_backend() in devices.h turns it into one for a device kind).
constexpr std::optional<Backend> parse_backend(std::string_view text) {
  for (Backend b : kAllBackends)
    if (text == to_string(b)) return b;
  return std::nullopt;
}

}  // namespace mb

// The compute backends by name: an enum for code that decides on a backend, the words
// ("reference", "onednn", "cuda") for run records, settings, flags and display. What each
// backend runs on and supports is the backend registry's (backends/registry.h).
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

// "reference", "onednn", "cuda"; nullopt for anything else.
constexpr std::optional<Backend> parse_backend(std::string_view text) {
  for (Backend b : kAllBackends)
    if (text == to_string(b)) return b;
  return std::nullopt;
}

// What a user asks for: a backend, or "auto" (nullopt), the registry's default for the
// device kind. The word "auto" exists only at the edges.
using BackendChoice = std::optional<Backend>;
inline constexpr std::string_view kAutoBackend = "auto";

constexpr std::string_view to_string(BackendChoice choice) { return choice ? to_string(*choice) : kAutoBackend; }

}  // namespace mb

// Precision names at the edges (flags, settings, run records), the enum inside.
#include "config/precision.h"

namespace mb {

std::string_view to_string(Precision p) { return p == Precision::Tf32 ? "tf32" : "fp32"; }

std::optional<Precision> parse_precision(std::string_view text) {
  for (Precision p : kAllPrecisions)
    if (text == to_string(p)) return p;
  return std::nullopt;
}

}  // namespace mb

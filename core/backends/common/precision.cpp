// Precision names at the edges (CLI, GUI, run records), the enum inside.
#include "backends/common/precision.h"

#include <fmt/format.h>

#include "util/error.h"

namespace mb {

Precision parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "tf32") return Precision::Tf32;
  throw ConfigError(fmt::format("--precision '{}': use fp32 or tf32", text));
}

std::string to_string(Precision p) { return p == Precision::Tf32 ? "tf32" : "fp32"; }

}  // namespace mb

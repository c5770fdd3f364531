// The engines' option words (see engine_options.h).
#include "config/engine_options.h"

#include <charconv>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {
namespace {

template <typename T>
bool parse_number(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string to_string(Conv2Kernel k) {
  switch (k) {
    case Conv2Kernel::Own: return "own";
    case Conv2Kernel::Onednn: return "onednn";
    case Conv2Kernel::OnednnDirect: return "onednn-direct";
  }
  return "own";
}

std::string to_string(CudaPath p) { return p == CudaPath::Fused ? "fused" : "cudnn"; }

FaultPlan parse_fault_plan(std::string_view text, std::string_view flag) {
  FaultPlan f;
  if (text.empty() || text == "none") return f;
  auto bad = [&] {
    return ConfigError(fmt::format("{} '{}': use stall:STEP, hang:STEP or abort:STEP, optionally :RANK (STEP >= 1 "
                                   "counts the run's training steps)",
                                   flag, text));
  };
  const auto c1 = text.find(':');
  if (c1 == std::string_view::npos) throw bad();
  const std::string_view kind = text.substr(0, c1), rest = text.substr(c1 + 1);
  if (kind == "stall")
    f.kind = FaultKind::Stall;
  else if (kind == "hang")
    f.kind = FaultKind::Hang;
  else if (kind == "abort")
    f.kind = FaultKind::Abort;
  else
    throw bad();
  const auto c2 = rest.find(':');
  if (!parse_number(rest.substr(0, c2), f.step) || f.step < 1) throw bad();
  if (c2 != std::string_view::npos && (!parse_number(rest.substr(c2 + 1), f.rank) || f.rank < 0)) throw bad();
  return f;
}

std::string to_string(const FaultPlan& f) {
  switch (f.kind) {
    case FaultKind::None: return "none";
    case FaultKind::Stall: return fmt::format("stall:{}:{}", f.step, f.rank);
    case FaultKind::Hang: return fmt::format("hang:{}:{}", f.step, f.rank);
    case FaultKind::Abort: return fmt::format("abort:{}:{}", f.step, f.rank);
  }
  return "none";
}

}  // namespace mb

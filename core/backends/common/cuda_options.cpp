// The CUDA engine's environment switches (see cuda_options.h).
#include "backends/common/cuda_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::string to_string(CudaPath p) { return p == CudaPath::Fused ? "fused" : "cudnn"; }

CudaPath parse_cuda_path(std::string_view text) {
  if (text.empty() || text == "cudnn") return CudaPath::Cudnn;
  if (text == "fused") return CudaPath::Fused;
  throw ConfigError(fmt::format("MB_CUDA_PATH='{}': use cudnn (the default) or fused", text));
}

FaultPlan parse_fault_plan(std::string_view text) {
  FaultPlan f;
  if (text.empty() || text == "none") return f;
  auto bad = [&] {
    return ConfigError(
        fmt::format("MB_INJECT_FAULT='{}': use stall:STEP, hang:STEP or abort:STEP, optionally "
                    ":RANK (STEP >= 1 counts the run's training steps)",
                    text));
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

double fault_spin_cap_s(double timeout_s) {
  if (!(timeout_s > 0) || !std::isfinite(timeout_s)) return kFaultSpinMaxS;
  return std::min(kFaultSpinMaxS, kFaultSpinTimeouts * timeout_s);
}

CudaOptions cuda_options_from_env() {
  CudaOptions o;
  o.path = parse_cuda_path(env("MB_CUDA_PATH"));
  const std::string no_graph = env("MIRRORBENCH_NO_GRAPH");
  o.graphs = no_graph.empty() || no_graph == "0";
  const std::string tune = env("MB_CUDNN_TUNE_S");
  if (!tune.empty()) {
    double s = -1;
    try {
      std::size_t used = 0;
      s = std::stod(tune, &used);
      if (used != tune.size()) s = -1;
    } catch (const std::exception&) {
      s = -1;
    }
    MB_CHECK(std::isfinite(s) && s >= 0 && s <= 600, ConfigError, "MB_CUDNN_TUNE_S='{}': seconds in 0..600", tune);
    o.tune_s = s;
  }
  o.fault = parse_fault_plan(env("MB_INJECT_FAULT"));
  return o;
}

}  // namespace mb

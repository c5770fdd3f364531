// The one closeness rule for a computed value against a reference, used by the selftest and
// by every test: llm.c's |x - ref| <= atol + rtol * |ref| (atol for values near zero, rtol
// for the rest). Header-only, no dependencies.
#pragma once
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>

namespace mb {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// |x - ref| / (atol + rtol |ref|): how many times the allowed error the actual one is, so
// <= 1 passes. NaN on either side is +inf (it must never pass, and NaN compares false).
inline double tolerance_ratio(double x, double ref, Tolerance tol) {
  const double diff = std::fabs(x - ref);
  if (std::isnan(diff)) return std::numeric_limits<double>::infinity();
  if (diff == 0) return 0;  // also for a zero tolerance: equal is always close
  return diff / (tol.atol + tol.rtol * std::fabs(ref));
}

inline bool within(double x, double ref, Tolerance tol) { return tolerance_ratio(x, ref, tol) <= 1.0; }

// The element of x furthest from ref relative to its allowance (the first on ties).
struct WorstElement {
  double ratio = 0;        // tolerance_ratio there; <= 1: the whole range passes
  std::size_t index = 0;
  double x = 0, ref = 0;
  double max_abs_err = 0;  // max |x - ref| over the range (+inf with a NaN)
};

inline WorstElement worst_element(std::span<const float> x, std::span<const float> ref, Tolerance tol) {
  WorstElement w;
  const std::size_t n = x.size() < ref.size() ? x.size() : ref.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double r = tolerance_ratio(x[i], ref[i], tol);
    const double d = std::fabs(double(x[i]) - double(ref[i]));
    w.max_abs_err = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::fmax(w.max_abs_err, d);
    if (r > w.ratio) w = {r, i, x[i], ref[i], w.max_abs_err};
  }
  return w;
}

}  // namespace mb

// Option numbers' parsing and range texts (see option_text.h).
#include "config/option_text.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "util/error.h"

namespace mb {
namespace {

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();

[[noreturn]] void fail(std::string_view flag, const std::string& reason) {
  throw ConfigError(flag.empty() ? reason : fmt::format("{}: {}", flag, reason));
}

// "in 1..100000" or ">= 0", to follow "an integer" or "must be".
std::string integer_phrase(int64_t min, int64_t max) {
  if (max == kMaxI64) return fmt::format(">= {}", min);
  return fmt::format("in {}..{}", min, max);
}

bool is_decimal(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

std::string short_number(double x) {
  std::string s = fmt::format("{:g}", x);
  const auto e = s.find("e+");
  if (e != std::string::npos) {
    std::size_t digits = e + 2;
    while (digits + 1 < s.size() && s[digits] == '0') ++digits;
    s = s.substr(0, e + 1) + s.substr(digits);
  }
  return s;
}

std::string integer_range_text(int64_t min, int64_t max) {
  return max == kMaxI64 ? fmt::format(">={}", min) : fmt::format("{}..{}", min, max);
}

std::string real_range_text(double lo, double hi, bool lo_open) {
  return fmt::format("{}{}, {}]", lo_open ? "(" : "[", short_number(lo), short_number(hi));
}

int64_t parse_integer_option(std::string_view flag, std::string_view text, int64_t min, int64_t max) {
  const std::string phrase = integer_phrase(min, max);
  if (!is_decimal(text)) fail(flag, fmt::format("expects an integer {}, got '{}'", phrase, text));
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range || v < min || v > max)
    fail(flag, fmt::format("{} is out of range (must be {})", text, phrase));
  return v;
}

uint64_t parse_unsigned_option(std::string_view flag, std::string_view text) {
  const std::string range = fmt::format("0..{}", std::numeric_limits<uint64_t>::max());
  if (!is_decimal(text)) fail(flag, fmt::format("expects an integer in {}, got '{}'", range, text));
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.front() == '-' || ec != std::errc()) fail(flag, fmt::format("{} is out of range (must be in {})", text, range));
  return v;
}

double parse_real_option(std::string_view flag, std::string_view text, double lo, double hi, bool lo_open) {
  const std::string range = real_range_text(lo, hi, lo_open);
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || stop != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    fail(flag, fmt::format("expects a number in {}, got '{}'", range, text));
  const bool below = lo_open ? !(v > lo) : !(v >= lo);
  if (ec == std::errc::result_out_of_range || !std::isfinite(v) || below || v > hi)
    fail(flag, fmt::format("{} is out of range (must be in {})", text, range));
  if (lo_open && lo == 0 && v < FLT_MIN)
    fail(flag, fmt::format("{} is out of range: below {:.2g}, the smallest normal float (the engines use it in single "
                           "precision); the range is {}",
                           text, double(FLT_MIN), range));
  return v;
}

}  // namespace mb

// Numbers as options are written: whole-text parsing with the range in the message, one
// implementation for the option table, the CLI's other flags and the GUI's command line.
// With a flag the message starts "--flag: "; without one it is the bare reason (CLI11 adds
// the flag itself), e.g. "2147483648 is out of range (must be in 1..100000)". ConfigError.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mb {

int64_t parse_integer_option(std::string_view flag, std::string_view text, int64_t min, int64_t max);
uint64_t parse_unsigned_option(std::string_view flag, std::string_view text);
// In [lo, hi], or (lo, hi] when lo_open; positive values (lo_open at 0) must also be normal
// floats, since the engines use them in single precision.
double parse_real_option(std::string_view flag, std::string_view text, double lo, double hi, bool lo_open);

// For help texts: "1..100000", ">=0", "(0, 1e6]", "[0, 60]".
std::string integer_range_text(int64_t min, int64_t max);
std::string real_range_text(double lo, double hi, bool lo_open);
std::string short_number(double x);   // 1e6 as "1e6", not "1e+06"

}  // namespace mb

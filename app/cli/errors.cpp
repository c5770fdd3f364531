// Exceptions to one stderr line and an exit code (see errors.h).
#include "errors.h"

#include <cstdio>
#include <new>

#include <fmt/format.h>

#include "util/error.h"

namespace mb::cli {

int report_error(const std::exception& e, const std::string& where) {
  const std::string prefix = where.empty() ? std::string() : where + ": ";
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) {
    fmt::print(stderr, "mirrorbench-cli: {}out of memory\n", prefix);
    return 1;
  }
  fmt::print(stderr, "mirrorbench-cli: {}{}\n", prefix, e.what());
  // Includes running out of memory while reading a data file: the DataError names the file.
  const bool bad_input = dynamic_cast<const ConfigError*>(&e) != nullptr || dynamic_cast<const DataError*>(&e) != nullptr;
  return bad_input ? 2 : 1;
}

}  // namespace mb::cli

// `mirrorbench-cli help`: the same text as --help, for those who type it as a command.
#include <fmt/format.h>

#include "cli_options.h"

namespace mb::cli {
namespace {

int run_help(const Options&) {
  fmt::print("{}", usage());
  return 0;
}

[[maybe_unused]] const bool registered = register_command({"help", "print this help", 90, {}, run_help});

}  // namespace
}  // namespace mb::cli

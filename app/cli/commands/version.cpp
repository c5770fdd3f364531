// `mirrorbench-cli version` (also `--version`): the version and the enabled components.
#include <fmt/format.h>

#include "backends/registry.h"
#include "cli_options.h"
#include "launch.h"
#include "util/system_info.h"

namespace mb::cli {
namespace {

int run_version(const Options&) {
  fmt::print("mirrorbench {}\ncomponents: {}; {}\n", version(), components_summary(), mpi_summary());
  return 0;
}

[[maybe_unused]] const bool registered =
    register_command({"version", "print the version and the enabled components", 40, {}, run_version});

}  // namespace
}  // namespace mb::cli

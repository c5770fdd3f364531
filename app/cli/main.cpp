// mirrorbench-cli: train, list devices, self-test (one file per subcommand in commands/).
// Errors: one line on stderr; exit 2 for bad arguments or data, 1 for a failed run.
#include <cstdio>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli_options.h"
#include "errors.h"

int main(int argc, char** argv) {
  using namespace mb::cli;
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto logger = spdlog::stderr_color_mt("mirrorbench");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(spdlog::level::warn);
  try {
    const Parsed p = parse(args);
    if (p.help_shown) return 0;
    if (p.command == nullptr) {
      fmt::print("{}", usage());
      return 2;
    }
    if (p.options.verbose) spdlog::set_level(spdlog::level::debug);
    return p.command->run(p.options);
  } catch (const std::exception& e) {
    return report_error(e);
  }
}

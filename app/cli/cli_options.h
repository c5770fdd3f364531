// Command-line parsing for mirrorbench-cli: strict (unknown flags, malformed numbers and
// missing values are errors that name the flag), no dependencies.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "trainer/train_config.h"

namespace mb::cli {

enum class Command { Train, Devices, Selftest, Version, Help };

struct Options {
  Command command = Command::Help;
  TrainConfig train;
  std::string json_out, csv_out, save_out;
  bool verbose = false;
};

// Throws ConfigError with a one-line message on any problem.
Options parse(const std::vector<std::string>& args);

std::string usage();

}  // namespace mb::cli

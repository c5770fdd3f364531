// The option table (config/train_options.h) on a CLI11 command: mirrorbench-cli's subcommands
// and the workbench's command line add their training flags with this, so both read them
// with the same code, ranges and messages. A flag's value is checked and stored when CLI11
// runs its callback (ConfigError naming the flag: "--epochs: 0 is out of range ...").
#pragma once
#include <initializer_list>
#include <string_view>

#include "config/train_config.h"

namespace CLI {
class App;
}  // namespace CLI

namespace mb::options {

// An option of the table on a command, with the command's own wording of the help if given.
struct TrainFlag {
  std::string_view key;
  std::string_view help = {};
};

// Every option of the table that has a flag of its own (what `train` takes).
void add_train_flags(CLI::App& app, TrainConfig& config);
// The listed ones only.
void add_train_flags(CLI::App& app, TrainConfig& config, std::initializer_list<TrainFlag> flags);

}  // namespace mb::options

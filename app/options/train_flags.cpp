// Training flags from the option table (see train_flags.h).
#include "options/train_flags.h"

#include <string>

#include <CLI/CLI.hpp>

#include "config/train_options.h"

namespace mb::options {
namespace {

void add_flag(CLI::App& app, TrainConfig& config, const TrainOption& o, std::string_view help) {
  const std::string text(help.empty() ? o.help : help);
  if (o.kind == OptionKind::Flag) {
    app.add_flag_function(
        std::string(o.flag), [&config, &o](int64_t) { set_option(o, config, o.inverted ? "false" : "true"); }, text);
    return;
  }
  CLI::Option* opt = app.add_option_function<std::string>(
      std::string(o.flag), [&config, &o](const std::string& value) { set_option(o, config, value); }, text);
  opt->type_name(option_value_help(o));
  if (const std::string d = option_text(o, TrainConfig{}); !d.empty()) opt->default_str(d);
}

}  // namespace

void add_train_flags(CLI::App& app, TrainConfig& config) {
  for (const TrainOption& o : train_options())
    if (!o.flag.empty()) add_flag(app, config, o, {});
}

void add_train_flags(CLI::App& app, TrainConfig& config, std::initializer_list<TrainFlag> flags) {
  for (const TrainFlag& f : flags) add_flag(app, config, train_option(f.key), f.help);
}

}  // namespace mb::options

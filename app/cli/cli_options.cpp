// mirrorbench-cli's command line on CLI11: the subcommand registry, the checked number
// transforms, and the translation of every parse failure into one line that names the flag.
#include "cli_options.h"

#include <algorithm>
#include <functional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "config/option_text.h"
#include "util/error.h"

namespace mb::cli {
namespace {

constexpr const char* kProgram = "mirrorbench-cli";

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

// The subcommands, and the options every command line shares.
void build(CLI::App& app, Options& options, bool& version_flag) {
  app.description("data-parallel (\"mirrored\") CNN training on CPU replicas and GPUs");
  app.name(kProgram);
  app.add_flag("--version", version_flag, "print the version and the enabled components");
  app.add_flag("--verbose", options.verbose, "log details to stderr (also after the subcommand)");
  app.require_subcommand(0, 1);
  // Unknown arguments are collected rather than thrown, so the message can say which
  // command did not expect them (CLI11's own says only "not expected").
  app.allow_extras();
  app.fallthrough();   // --verbose after the subcommand reaches this level
  app.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(fmt::format("'{} <command> --help' describes a command's options.", kProgram));
  for (const Command& c : registered_commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    sub->allow_extras();
    if (c.add_options) c.add_options(*sub, options);
  }
}

std::string command_list() {
  std::vector<std::string> names;
  for (const Command& c : registered_commands()) names.push_back(c.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// "--epochs: 1 required INT missing" -> "--epochs"
std::string option_name(const std::string& message) { return message.substr(0, message.find(':')); }

}  // namespace

bool register_command(Command command) {
  auto& r = registry();
  r.push_back(std::move(command));
  std::stable_sort(r.begin(), r.end(), [](const Command& a, const Command& b) { return a.order < b.order; });
  return true;
}

const std::vector<Command>& registered_commands() { return registry(); }

Parsed parse(const std::vector<std::string>& args) {
  Parsed p;
  CLI::App app;
  bool version_flag = false;
  build(app, p.options, version_flag);
  std::vector<std::string> reversed(args.rbegin(), args.rend());   // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    p.help_shown = true;
    return p;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    p.help_shown = true;
    return p;
  } catch (const CLI::ArgumentMismatch& e) {
    // The only mismatch left with TakeLast: an option at the end without its value.
    throw ConfigError(fmt::format("{} needs a value", option_name(e.what())));
  } catch (const CLI::ParseError& e) {
    // ValidationError: "--epochs: 2147483648 is out of range (1..100000)" from the transforms.
    throw ConfigError(e.what());
  }

  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands()) sub = s;
  for (const Command& c : registered_commands())
    if (sub != nullptr && c.name == sub->get_name()) p.command = &c;

  const auto extras = app.remaining(true);
  if (!extras.empty()) {
    const std::string& first = extras.front();
    const bool is_option = !first.empty() && first.front() == '-';
    if (sub == nullptr && is_option)
      throw ConfigError(fmt::format("unknown option '{}' (see {} --help)", first, kProgram));
    if (sub == nullptr)
      throw ConfigError(fmt::format("unknown command '{}' (try: {}, --version, --help)", first, command_list()));
    if (is_option)
      throw ConfigError(fmt::format("unknown option '{}' for '{}' (see {} {} --help)", first, sub->get_name(),
                                    kProgram, sub->get_name()));
    throw ConfigError(fmt::format("unexpected argument '{}' for '{}' (see {} {} --help)", first, sub->get_name(),
                                  kProgram, sub->get_name()));
  }
  if (version_flag && p.command == nullptr)
    for (const Command& c : registered_commands())
      if (c.name == "version") p.command = &c;
  return p;
}

std::string usage() {
  CLI::App app;
  Options options;
  bool version_flag = false;
  build(app, options, version_flag);
  return app.help();
}

// A validator around one of option_text.h's parsers: its message, or the text rewritten.
CLI::Validator checked(std::function<std::string(const std::string&)> canonical, std::string description,
                       std::string name) {
  return CLI::Validator(
      [canonical = std::move(canonical)](std::string& text) -> std::string {
        try {
          text = canonical(text);
          return {};
        } catch (const ConfigError& e) {
          return e.what();
        }
      },
      std::move(description), std::move(name));
}

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return checked([lo, hi](const std::string& t) { return std::to_string(parse_integer_option({}, t, lo, hi)); },
                 integer_range_text(lo, hi), "integer_in");
}

CLI::Validator unsigned_integer() {
  return checked([](const std::string& t) { return std::to_string(parse_unsigned_option({}, t)); }, "0..2^64-1",
                 "unsigned_integer");
}

CLI::Validator not_an_option() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        if (text.rfind("--", 0) == 0) return fmt::format("needs a value, not the option '{}'", text);
        return {};
      },
      "", "not_an_option");
}

CLI::Validator positive_real_up_to(double hi) {
  // Hexadecimal: CLI11 reads it back with strtold without any decimal rounding.
  return checked([hi](const std::string& t) { return fmt::format("{:a}", parse_real_option({}, t, 0, hi, true)); },
                 real_range_text(0, hi, true), "positive_real_up_to");
}

}  // namespace mb::cli

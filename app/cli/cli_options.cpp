// mirrorbench-cli's command line on CLI11: the subcommand registry, the checked number
// transforms, and the translation of every parse failure into one line that names the flag.
#include "cli_options.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "util/error.h"

namespace mb::cli {
namespace {

constexpr const char* kProgram = "mirrorbench-cli";

std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}

// "in 1..100000" or ">= 0", to follow "an integer" or "must be".
std::string range_phrase(int64_t lo, int64_t hi) {
  if (hi == std::numeric_limits<int64_t>::max()) return fmt::format(">= {}", lo);
  return fmt::format("in {}..{}", lo, hi);
}

// 1e6 as "1e6", not fmt's "1e+06".
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

bool is_decimal(std::string_view s) {
  if (!s.empty() && s.front() == '-') s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
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

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  const std::string phrase = range_phrase(lo, hi);
  const std::string description =
      hi == std::numeric_limits<int64_t>::max() ? fmt::format(">={}", lo) : fmt::format("{}..{}", lo, hi);
  return CLI::Validator(
      [lo, hi, phrase](std::string& text) -> std::string {
        if (!is_decimal(text)) return fmt::format("expects an integer {}, got '{}'", phrase, text);
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc::result_out_of_range || v < lo || v > hi)
          return fmt::format("{} is out of range (must be {})", text, phrase);
        if (ec != std::errc() || end != text.data() + text.size())
          return fmt::format("expects an integer {}, got '{}'", phrase, text);
        text = std::to_string(v);
        return {};
      },
      description, "integer_in");
}

CLI::Validator unsigned_integer() {
  const std::string range = fmt::format("0..{}", std::numeric_limits<uint64_t>::max());
  const std::string description = "0..2^64-1";
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        if (!is_decimal(text)) return fmt::format("expects an integer in {}, got '{}'", range, text);
        uint64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (text.front() == '-' || ec == std::errc::result_out_of_range)
          return fmt::format("{} is out of range (must be in {})", text, range);
        if (ec != std::errc() || end != text.data() + text.size())
          return fmt::format("expects an integer in {}, got '{}'", range, text);
        text = std::to_string(v);
        return {};
      },
      description, "unsigned_integer");
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
  const std::string range = fmt::format("(0, {}]", short_number(hi));
  return CLI::Validator(
      [hi, range](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || stop != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
          return fmt::format("expects a number in {}, got '{}'", range, text);
        if (ec == std::errc::result_out_of_range || !std::isfinite(v) || v <= 0 || v > hi)
          return fmt::format("{} is out of range (must be in {})", text, range);
        if (v < FLT_MIN)
          return fmt::format("{} is out of range: below {:.2g}, the smallest normal float (the engines use it in "
                             "single precision); the range is {}",
                             text, double(FLT_MIN), range);
        // Hexadecimal: CLI11 reads it back with strtold without any decimal rounding.
        text = fmt::format("{:a}", v);
        return {};
      },
      range, "positive_real_up_to");
}

}  // namespace mb::cli

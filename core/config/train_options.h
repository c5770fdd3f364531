// Every training option, described once: its key, flag, value name, help text, kind and range
// (the default is TrainConfig{}'s), whether every process of a run must agree on it, whether
// the workbench remembers it, the record fields it resolves to and how, and how to get it back
// from a record. This one table drives mirrorbench-cli's flags (app/options), the workbench's
// command line (the same code), the command line of a child run under mpirun, the settings,
// config_digest() (the cross-process check), the help texts and the record's configuration.
// Adding an option is adding a TrainConfig field and a row here; the tests walk the table.
// The scenario's fields (config/scenario.h) are rows too, read and written on the Scenario
// value itself, so the record, its CSV and the labels of runs come from the same rows.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/run_config.h"
#include "config/train_config.h"

namespace mb {

// What resolving a request needs besides the request: the run's facts.
struct RunShape {
  int replicas = 1;                  // over all processes
  int processes = 1;
  Backend backend = Backend::OneDnn; // the request's choice resolved for its devices (the registry's)
  std::string dataset, data_dir;     // the data set that was loaded
  int64_t train_available = 0, val_available = 0;
};

enum class OptionKind {
  Integer,    // int or int64 in [min, max]
  Unsigned,   // any uint64
  Real,       // a double in [lo, hi] ((lo, hi] when lo_open)
  Flag,       // a bool: the flag's presence sets it (clears it when inverted)
  Text,       // a string (a path)
  Custom,     // its own syntax, format/parse below (devices, backend, precision, RANK:FACTOR)
};
// (A scenario field has the kind of its syntax, Flag or Custom, and its text in `scenario`.)

// A row that is a field of the run's scenario: its text on the Scenario value (so a RunConfig's
// scenario is written with it too) and how it reads to people.
struct ScenarioAccess {
  std::string (*format)(const Scenario&) = nullptr;             // canonical text; nullptr: not a scenario field
  void (*parse)(Scenario&, std::string_view text) = nullptr;    // throws ConfigError naming the flag
  std::string (*tag)(const Scenario&) = nullptr;                // short, for legends and lists; "" when off
  std::string (*describe)(const Scenario&) = nullptr;           // a sentence for cards and logs; "" when off
  ScenarioEffect effect = ScenarioEffect::Simulated;
};

// A row that is one of the engines' options: its text on the EngineOptions value.
struct EngineAccess {
  std::string (*format)(const EngineOptions&) = nullptr;        // nullptr: not an engine option
  void (*parse)(EngineOptions&, std::string_view text) = nullptr;
};

using OptionMember = std::variant<std::monostate, int TrainConfig::*, int64_t TrainConfig::*, uint64_t TrainConfig::*,
                                  double TrainConfig::*, bool TrainConfig::*, std::string TrainConfig::*>;

struct TrainOption {
  std::string_view key;            // the settings key (run/<key>), the digest's word, the tests' name
  std::string_view flag;           // "--batch"; empty: no flag of its own (trace: set by --trace FILE)
  std::string_view value_name;     // "B" (flags: empty)
  std::string_view help;
  OptionKind kind = OptionKind::Integer;
  OptionMember member;             // where the value lives (monostate for Custom)
  int64_t min = 0, max = 0;        // Integer: the range
  double lo = 0, hi = 0;           // Real: the range ...
  bool lo_open = false;            // ... without lo itself
  bool inverted = false;           // Flag: present means false (--no-breakdown)
  std::string_view syntax;         // Custom: shown after the value name in the help ("{fp32,tf32}")
  bool agree = false;              // every process must agree (it changes the math or the collectives)
  bool remembered = false;         // the workbench's settings keep it between launches
  std::string_view record_keys;    // the record's config fields it resolves to, comma-separated
  std::string_view example;        // a valid value other than the default (tests, help)
  std::string_view example_with;   // the option whose example this one's needs to take effect (the
                                   // input pipeline's settings act only with an input cost)
  std::string (*format)(const TrainConfig&) = nullptr;          // Custom: canonical text
  void (*parse)(TrainConfig&, std::string_view text) = nullptr;  // Custom: throws ConfigError
  void (*resolve)(const TrainConfig&, const RunShape&, RunConfig&) = nullptr;   // nullptr: not recorded
  void (*recover)(const RunConfig&, TrainConfig&) = nullptr;                    // nullptr: the default
  ScenarioAccess scenario;         // a field of TrainConfig::scenario / RunConfig::scenario
  EngineAccess engine;             // a field of TrainConfig::engine / RunConfig::engine

  bool is_scenario() const { return scenario.format != nullptr; }
  bool is_engine() const { return engine.format != nullptr; }
};

std::span<const TrainOption> train_options();
const TrainOption& train_option(std::string_view key);   // a key of the table (std::out_of_range otherwise)

// The value as canonical text, which set_option reads back to the same value ("true"/"false"
// for flags; numbers in their shortest exact form).
std::string option_text(const TrainOption& option, const TrainConfig& config);
// Parses `text` into the option's field, checking its range: throws ConfigError naming the
// flag, e.g. "--epochs: 2147483648 is out of range (must be in 1..100000)".
void set_option(const TrainOption& option, TrainConfig& config, std::string_view text);
bool is_default(const TrainOption& option, const TrainConfig& config);
// For the help: "E:1..100000", "X:(0, 1e6]", "P:{fp32,tf32}", "LIST" (empty for flags).
std::string option_value_help(const TrainOption& option);

// The options every process must agree on, as one digest (data folders may differ).
uint64_t config_digest(const TrainConfig& config);
// The record fields the options resolve to (the rest of RunConfig at its defaults).
RunConfig resolve_options(const TrainConfig& config, const RunShape& shape);
// The request that repeats a recorded run (resolving it again gives the same record fields).
TrainConfig request_from_record(const RunConfig& config);
// The flags that give `config` to mirrorbench-cli train: every option with a flag of its own,
// in table order (flags, which can only switch on, where they differ from the default).
std::vector<std::string> option_arguments(const TrainConfig& config);

// The scenario as the table's rows read it: the active fields' short tags in table order
// ("simulated straggler r1 ×3 · simulated link 1 Gbit/s"), their sentences, and what they do.
// `only`: the fields of that effect alone.
std::vector<std::string> scenario_tags(const Scenario& scenario, std::optional<ScenarioEffect> only = std::nullopt);
std::vector<std::string> scenario_descriptions(const Scenario& scenario);
bool is_plain(const Scenario& scenario);            // no field on: the machine's own plain training
bool changes_math(const Scenario& scenario);        // a field on whose effect is ScenarioEffect::Math
// The scenario's fields by option key and canonical text (what the record stores), and back:
// a key the table does not know, or a text its row refuses, throws ConfigError naming it.
std::vector<std::pair<std::string, std::string>> scenario_texts(const Scenario& scenario);
void set_scenario_text(Scenario& scenario, std::string_view key, std::string_view text);
// The same for the engines' options (the record's "engine_options").
std::vector<std::pair<std::string, std::string>> engine_option_texts(const EngineOptions& options);
void set_engine_option_text(EngineOptions& options, std::string_view key, std::string_view text);

// --simulated-link's text, "GBIT[:US]" or "off" (gbit 0); the reader throws ConfigError naming
// `flag` (the sweep's --links reads each entry with it).
std::string simulated_link_text(const SimulatedLink& link);
SimulatedLink simulated_link_from_text(std::string_view text, std::string_view flag = "--simulated-link");

}  // namespace mb

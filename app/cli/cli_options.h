// Command-line parsing for mirrorbench-cli on CLI11: subcommands registered by the files in
// commands/, typed and range-checked options, and one clear line for every mistake
// (the flag, the value, what is wrong), thrown as ConfigError.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "experiment/calibrate.h"
#include "config/train_config.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace mb::cli {

// The values the subcommands' options fill.
struct Options {
  TrainConfig train;
  std::string json_out, csv_out, save_out, trace_out;
  std::string progress = "text";   // text: a bar and epoch lines; json: progress_events.h lines
  int max_replicas = 0;            // scaling: predict 1..N replicas (0: twice this machine's cores)
  double link_gbps = 0;            // scaling: more machines over a link of this bandwidth
  double link_latency_us = 20;     // scaling: per message on that link
  int machines = 0;                // scaling: the replicas on this many machines (0: as many as they need)
  std::string calibration_in;      // scaling: a saved calibration to predict from, instead of measuring
  int64_t round_images = CalibrateOptions{}.round_images;   // scaling: images per replica per timed round
  bool verbose = false;
};

// One subcommand. Each commands/<name>.cpp defines one and registers it from a namespace-scope
// initialiser (`[[maybe_unused]] const bool registered = register_command({...});`), so adding
// a subcommand is adding a file. Those files are compiled into the executable itself: a static
// library would let the linker drop them, registration and all.
struct Command {
  std::string name;
  std::string summary;                                        // one line, for --help
  int order = 100;                                            // position in --help
  std::function<void(CLI::App& sub, Options& options)> add_options;   // may be empty
  std::function<int(const Options& options)> run;             // returns the exit code
};

bool register_command(Command command);
const std::vector<Command>& registered_commands();  // in --help order

// What the command line asks for: the command to run (null: none, print the usage) and the
// values its options filled.
struct Parsed {
  const Command* command = nullptr;
  Options options;
  bool help_shown = false;   // --help (or help): the text is printed, nothing else to do
};

// Throws ConfigError with a one-line message naming the flag and the problem.
Parsed parse(const std::vector<std::string>& args);

std::string usage();  // the top-level --help text

// Transforms for the typed options outside the option table (the training options are
// config/train_options.h's, added with options/train_flags.h): each checks the whole text
// with config/option_text.h and rewrites it canonically (CLI11 itself would read "010" as
// octal). Messages: "--max-replicas: 5000 is out of range (must be in 1..4096)".
CLI::Validator integer_in(int64_t lo, int64_t hi);
CLI::Validator unsigned_integer();   // any uint64
// For text options (paths, device lists): a value that starts with "--" is the next option,
// which CLI11 would take as the value ("--json --epochs 3" writing a file named --epochs).
CLI::Validator not_an_option();
// (lo, hi] for a learning rate: finite, and at least the smallest normal float, since the
// engines use it in single precision (1e-320 would be 0 there).
CLI::Validator positive_real_up_to(double hi);

}  // namespace mb::cli

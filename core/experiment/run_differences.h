// What differs between two runs' configurations, setting by setting, in short words ("2
// replicas" against "1 replica", "tf32" against "fp32"): the window names the runs it shows
// together by it ("baseline", "2 replicas", "2 replicas · tf32"), and an audit of a comparison
// can list it. A list of named differences, not a sentence, so each use picks what it needs;
// the scenario's and the engines' settings are the option table's rows (config/train_options.h).
// Qt-free, so the command line can say the same.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace mb {

// One setting in which two runs differ and how each run reads in it. A side is "" where the
// setting is off for that run (a scenario field, the teaching pace): "simulated straggler r1
// ×3" against "".
struct RunDifference {
  std::string setting;   // "replicas", "devices", "processes", "model", "batch", "learning_rate",
                         // "epochs", "data", "train_size", "val_size", "backend", "precision", a
                         // scenario or engine option's key ("slow_replica", "cpu_conv2"),
                         // "pace", "time_phases", "seed"
  std::string first, second;
  bool operator==(const RunDifference&) const = default;
};

// The settings in which `a` and `b` differ, always in the order above (what the run ran on first,
// the seed last). Empty when they differ in nothing a user chooses (their ids, start times and
// the machine's facts do not count).
std::vector<RunDifference> run_differences(const RunConfig& a, const RunConfig& b);

// For runs shown together: each run's words in every setting in which any two of them differ,
// in the order of run_differences, empty words left out ({"2 replicas", "batch 256"}). Runs that
// differ in nothing get no words. `what_ifs`: each run also says where it departs from plain
// training (a what-if model, a scenario field on), shared or not: a class must never take a
// demonstration for the machine's own numbers.
std::vector<std::vector<std::string>> distinguishing_words(std::span<const RunConfig* const> runs, bool what_ifs = false);

// How a run reads in its replica count ("1 replica", "2 replicas"): its name when nothing else
// tells it apart from the runs beside it.
std::string replicas_words(const RunConfig& config);

}  // namespace mb

// Can this request run, and what is worth knowing before it does? The one place where the
// rules of a run live (asking the backend registry and the option table): the CLI refuses a
// run with them before loading data, the trainer before it starts, and the workbench shows
// the very same list under its fields. Every problem names the option it is about.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "backends/devices.h"
#include "config/train_config.h"

namespace mb {

struct RunProblem {
  enum class Severity { Error, Advice };
  std::string option;      // the option's key (config/train_options.h), e.g. "batch"
  std::string message;
  Severity severity = Severity::Error;
  bool is_error() const { return severity == Severity::Error; }
};

// Where the run goes: `processes` processes, each with the request's devices, on this machine
// only (no hostfile: its devices are in `machine`), or on other hosts too.
struct RunSite {
  int processes = 1;
  bool this_machine_only = true;
  const DeviceInventory* machine = nullptr;   // this machine's devices (nullptr: not checked)
};

// Every problem (errors first, in option order, then advice). Needs neither data nor devices
// beyond the inventory given.
std::vector<RunProblem> check_run(const TrainConfig& config, const RunSite& site = {});

// Throws ConfigError with every error of check_run, one per line; returns the advice.
std::vector<RunProblem> require_runnable(const TrainConfig& config, const RunSite& site = {});

// The replicas of the run over all processes (devices x processes).
int total_replicas(const TrainConfig& config, int processes);
// The global batch of the run (batch, or batch x replicas in per-replica mode).
int64_t global_batch(const TrainConfig& config, int processes);

}  // namespace mb

// A request resolved against this process's place in the run, the machine and the data: what
// the trainer and the engines see (typed values only, no words), and the record's
// configuration. The option table (config/train_options.h) says which option resolves to
// which record field; this adds the facts of the run (devices made concrete, the machine,
// versions).
#pragma once
#include "backends/devices.h"
#include "comm/process_link.h"
#include "config/run_config.h"
#include "config/train_config.h"
#include "data/dataset.h"

namespace mb {

struct ResolvedRun {
  RunConfig config;          // what the record stores (devices as asked: cuda:local kept)
  DeviceList devices;        // this process's replicas, cuda:local made concrete
  ModelSpec model;           // what every replica trains (config.model is its name)
  ProcessInfo world;         // this process among the run's
  bool trace = false;        // sample steps for a Chrome trace (every process alike)
  double timeout_s = 60;     // how long a peer may stay silent (runs across processes)
  std::vector<ShareChange> replay_shares;   // --shares-from: the recorded share changes (else empty)
  int64_t steps_per_epoch() const;
};

// Throws ConfigError for a request that cannot run here (check_run's errors, the data's
// image size, a --shares-from record that is missing, corrupt, lock-step or of another
// configuration); the advice goes to spdlog.
ResolvedRun resolve_run(const TrainConfig& config, const ProcessInfo& world, const DataSplit& data,
                        const DeviceInventory& inventory);

}  // namespace mb

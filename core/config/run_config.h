// A run's resolved configuration, as its record stores it: the request resolved against the
// machine and the data (the learning rate after scaling, the largest per-replica share, the
// training size after --limit-train; config/train_options.h says which option resolves to
// which field) plus the facts of the run (processes, hosts, communicator, versions). Typed
// inside; records/run_record.h writes the words.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/backend.h"
#include "config/device_list.h"
#include "config/engine_options.h"
#include "config/precision.h"
#include "config/scenario.h"
#include "model/model_spec.h"

namespace mb {

// Balanced shares: from run step `step` (counting from 0 over the run) on, replica r takes
// shares[r] samples of every full global batch (trainer/share_balancer.h).
struct ShareChange {
  int64_t step = 0;
  std::vector<int64_t> shares;
  bool operator==(const ShareChange&) const = default;
};

struct RunConfig {
  ModelSpec model;                       // the reference CNN unless --model said otherwise
  DeviceList devices;                    // as asked (cuda:local kept): cpu:2, cuda:0,cuda:1
  int replicas = 1;                      // over all processes
  int processes = 1;                     // > 1 under mpirun/srun
  int replicas_per_process = 1;
  std::vector<std::string> hosts;        // the processes' hosts, distinct, in process order
  bool simulated = false;                // several replicas on one GPU
  Scenario scenario;                     // the what-ifs and demonstrations, as run (balance only with
                                         // several replicas: its digests differ from lock-step's)
  double step_delay_s = 0;               // > 0: teaching pace, every step lasted at least this
                                         // long (a demonstration: its times are not the machine's)
  bool time_phases = true;               // the per-replica breakdown was measured
  std::vector<ShareChange> share_changes;   // balanced: every change of shares, the first at step 0
  int64_t global_batch = 128;
  int64_t per_replica_batch = 128;       // largest replica share of the global batch
  bool per_replica_batch_mode = false;   // --per-replica-batch: global = per-replica x N
  int epochs = 5;
  double base_learning_rate = 1e-3;
  double learning_rate = 1e-3;           // after --scale-lr
  bool scale_lr = false;
  uint64_t seed = 1;
  std::string dataset;                   // "fashion-mnist"
  std::string data_dir;
  int64_t train_size = 0, val_size = 0;
  Backend backend = Backend::OneDnn;
  Precision precision = Precision::Fp32; // tf32: GPU convolutions and GEMMs on tensor cores
  EngineOptions engine;                  // the kernel choices asked for (config/engine_options.h)
  std::string kernels;                   // CPU runs: what ran, "Highway avx3, oneDNN avx2, conv2 own winograd"
  std::string communicator;              // "threads", "mpi+threads", "nccl", "in-gpu (simulated)"
  std::string version;
  std::string cpu_model;
  std::vector<std::string> gpu_models;
  std::string start_time;                // ISO 8601 UTC

  DeviceKind device_kind() const { return mb::device_kind(devices); }
  std::string devices_text() const { return format_devices(devices); }
  bool operator==(const RunConfig&) const = default;
};

}  // namespace mb

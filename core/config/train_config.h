// What the user asks for (CLI flags, GUI fields, settings, a child's command line), typed:
// device lists, backend and precision are parsed once, at the edge (config/train_options.h
// describes every field once: flag, help, range, default, record key). The trainer resolves
// it against the machine and the data into a RunConfig (the record's configuration).
#pragma once
#include <cstdint>
#include <string>

#include "config/backend.h"
#include "config/device_list.h"
#include "config/engine_options.h"
#include "config/precision.h"
#include "config/scenario.h"
#include "model/model_spec.h"
#include "util/deadline.h"

namespace mb {

// The largest global batch a run, a sweep or the panel accepts (the engines' plans and the
// step's index buffers are sized by it).
inline constexpr int64_t kMaxGlobalBatch = 65536;
inline constexpr int64_t kMaxAccumulate = 1024;   // --accumulate: micro-batches per optimizer step
inline constexpr double kMaxBucketMb = 4096;       // --bucket-mb: larger than any gradient here
inline constexpr int64_t kMaxPowerSgdRank = 64;    // --powersgd: the paper's ranks are 1 to 4; beyond 64 little is saved
inline constexpr double kMaxInputCostMs = 1000;    // --input-latency, --input-cpu: per image
inline constexpr int64_t kMaxLoaders = 64;         // --loaders: per replica
inline constexpr int64_t kMaxPrefetch = 64;        // --prefetch: steps ahead

struct TrainConfig {
  std::string data_dir;                       // empty: default_data_dir()
  DeviceList devices = cpu_replicas(1);
  ModelSpec model;                            // the reference CNN, or a what-if dense width
  int64_t batch = 128;                        // global batch; per replica when per_replica_batch
  bool per_replica_batch = false;             // the experiment's "bonus": global = batch x replicas
  double lr = 1e-3;                           // Adam learning rate before scaling
  bool scale_lr = false;                      // linear scaling: lr x replicas
  int epochs = 5;
  uint64_t seed = 1;
  int64_t limit_train = 0;                    // 0: whole training set
  int64_t limit_val = 0;                      // 0: whole validation set
  BackendChoice backend;                      // nullopt: auto, the fastest for the device kind
  Precision precision = Precision::Fp32;      // tf32: GPU replicas only (TF32 tensor cores)
  Scenario scenario;                          // what-ifs and demonstrations: straggler, link, balanced shares
  EngineOptions engine;                       // kernel choices (the lab, benchmarks, the GPU check, fault tests)
  double timeout_s = kDefaultTimeoutS;        // the longest any wait on another replica, process or
                                              // device may last before the run fails naming it

  // Insight and demonstration.
  bool time_phases = true;                    // the per-replica breakdown (off only to measure its cost)
  bool trace = false;                         // keep sampled per-step phase events (a Chrome trace)
  double step_delay_s = 0;                    // teaching pace: every step lasts at least this long (and is
                                              // reported in detail), so a class can follow one at a time

  bool operator==(const TrainConfig&) const = default;
};

// The global batch of a run of `replicas` replicas.
inline int64_t global_batch_of(const TrainConfig& c, int replicas) {
  return c.per_replica_batch ? c.batch * replicas : c.batch;
}

}  // namespace mb

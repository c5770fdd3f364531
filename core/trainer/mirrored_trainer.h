// The mirrored trainer (tf.distribute.MirroredStrategy semantics): N replicas, each a full
// copy of the model on its own device and driven by its own thread; the global batch is
// split as evenly as possible across replicas; each replica's loss is its sum over its
// samples divided by the global batch; gradients are summed by an all-reduce; every replica
// applies the identical Adam step. After each epoch the replicas' parameters are compared.
//
// The replicas may live in several processes (mpirun/srun, one MirroredTrainer per process,
// joined by a ProcessLink): everything the replicas share goes through their communicators
// (initial weights by broadcast, step statistics and digests by all-gather), so threads and
// processes run the same code. Process 0 holds the run's record and calls the observer.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/devices.h"
#include "comm/process_link.h"
#include "data/dataset.h"
#include "records/chrome_trace.h"
#include "records/run_record.h"
#include "trainer/train_config.h"

namespace mb {

// One training step as it happened, for the classroom view: the global batch, each replica's
// share of it, what each computed from its share alone, the all-reduce, and the identical
// update that arrived at every replica (equal parameter digests).
struct ReplicaStepDetail {
  int64_t share_begin = 0, share_count = 0;   // this replica's samples: the step's [begin, begin+count)
  double loss = 0;                            // mean cross-entropy over its own samples
  int64_t correct = 0;
  double grad_norm = 0;                       // its own gradient, before the all-reduce (NaN: not known)
  std::string digest;                         // its parameters after the update
  PhaseTimes phases;                          // this step's
};
struct StepDetail {
  int64_t global_batch = 0;
  std::vector<int32_t> samples;               // the step's first sample indices (at most 256), in order
  double allreduce_bytes = 0;                 // the gradient each replica sends and receives
  std::vector<ReplicaStepDetail> replicas;
};

struct StepProgress {
  int epoch = 0, epochs = 0;          // 1-based epoch
  int64_t step = 0, steps = 0;        // 1-based step within the epoch
  int64_t images_done = 0;            // in this epoch
  double epoch_elapsed_s = 0;
  double images_per_s = 0;
  double eta_s = 0;                   // rest of this epoch
  double running_loss = 0, running_acc = 0;
  // Where the last reported steps went, per replica (recent[k][r]: the k-th of the last few
  // reports, oldest first; a report covers steps_per_report steps): the live timeline.
  std::vector<std::vector<PhaseTimes>> recent;
  int steps_per_report = 1;
  // Per replica, this epoch's phases summed over its steps so far: the breakdown of the epoch
  // in progress (EpochMetrics::replica_times once it ends).
  std::vector<PhaseTimes> epoch_times;
  // Every 16th step, and every step at teaching pace (TrainConfig::step_delay_s): the step in
  // detail. Such steps always reach on_step (others are reported at most every 50 ms).
  bool has_detail = false;
  StepDetail detail;
};

enum class LogLevel { Info, Warning, Error };

// Called from a training thread: keep it short, copy values, do not touch GUI objects.
// The trainer's log lines also go to spdlog; on_log is for front ends that show them per run.
struct TrainObserver {
  std::function<void(const RunConfig&)> on_start;
  std::function<void(const StepProgress&)> on_step;
  std::function<void(const EpochMetrics&)> on_epoch;
  std::function<void(LogLevel, const std::string&)> on_log;
  // A replica thread is stuck inside a device driver after the run failed (replica_threads.h):
  // the record as it would be returned (status failed). run() cannot return while that thread
  // may still touch its state, so a front end ends the process here (the CLI writes its
  // outputs and exits) or tells the user to restart; without it the trainer logs that.
  std::function<void(const RunRecord&)> on_stuck;
};

// The global batch split: replica r of n gets [begin(r), begin(r+1)) of a batch of size b.
// Shares differ by at most one sample; the first (b % n) replicas get the larger share.
int64_t replica_share_begin(int64_t batch, int replicas, int replica);

// Checks everything about a configuration that needs neither data nor devices (arguments,
// batch vs replicas, backend name) for a run of `processes` processes: callers run it before
// loading data so a typo is reported at once. Returns this process's devices; throws
// ConfigError.
std::vector<DeviceSpec> check_train_config(const TrainConfig& config, int processes = 1);

// The digest every process compares before training: same images and labels, same bytes.
uint64_t data_digest(const DataSplit& data);

class MirroredTrainer {
 public:
  // Checks the configuration against the data and the machine; throws ConfigError. With a
  // link to other processes this is collective: every process checks that the others got
  // the same configuration and the same data (DataError naming the host otherwise).
  MirroredTrainer(TrainConfig config, std::shared_ptr<const DataSplit> data,
                  std::shared_ptr<ProcessLink> link = nullptr);
  ~MirroredTrainer();

  // Trains to completion, stop or failure and returns the record (one run() per trainer)
  // (status set accordingly; a device failure gives status "failed" with the message, never
  // an exception). Collective over the link. On processes other than 0 the record has the
  // status and error but no epochs.
  RunRecord run(const TrainObserver& observer = {});

  // Thread-safe; the run stops at the next statistics exchange (every step on CPUs) and
  // returns status "stopped". A stop in any process stops every process.
  void request_stop() { stop_.store(true); }

  const RunConfig& run_config() const { return run_config_; }
  bool is_primary() const { return process_ == 0; }   // writes records, prints progress
  const std::vector<float>& final_params() const { return final_params_; }  // process 0, after run()
  // With TrainConfig::trace: every replica's sampled steps (process 0, after run(); empty when
  // the run failed, since a failed run cannot gather them).
  const std::vector<std::vector<TraceStep>>& trace() const { return trace_; }

  // For tests and tools: builds the replicas' engines instead of make_engine (the devices are
  // still checked, and the communicators made for them). Before run().
  using EngineFactory = std::function<std::unique_ptr<ReplicaEngine>(const DeviceSpec&, int max_batch)>;
  void set_engine_factory(EngineFactory factory) { engine_factory_ = std::move(factory); }

 private:
  struct Impl;
  TrainConfig config_;
  std::shared_ptr<const DataSplit> data_;
  std::shared_ptr<ProcessLink> link_;
  std::vector<DeviceSpec> devices_;    // this process's, cuda:local resolved
  int process_ = 0;
  RunConfig run_config_;
  std::vector<float> final_params_;
  std::vector<std::vector<TraceStep>> trace_;
  std::atomic<bool> stop_{false};
  EngineFactory engine_factory_;
};

}  // namespace mb

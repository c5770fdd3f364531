// The mirrored trainer (tf.distribute.MirroredStrategy semantics): N replicas, each a full
// copy of the model on its own device and driven by its own thread; the global batch is
// split as evenly as possible across replicas; each replica's loss is its sum over its
// samples divided by the global batch; gradients are summed by an all-reduce; every replica
// applies the identical Adam step. After each epoch the replicas' parameters are compared.
//
// The replicas may live in several processes (mpirun/srun, one MirroredTrainer per process,
// joined by a ProcessLink): everything the replicas share goes through their communicators
// (initial weights by broadcast, step statistics and digests by all-gather), so threads and
// processes run the same code (trainer/replica_loop.h). Process 0 holds the run's record and
// calls the observer.
#pragma once
#include <atomic>
#include <memory>
#include <vector>

#include "comm/process_link.h"
#include "config/train_config.h"
#include "data/dataset.h"
#include "records/chrome_trace.h"
#include "records/run_record.h"
#include "trainer/record_builder.h"
#include "trainer/replica_loop.h"
#include "trainer/resolved_run.h"
#include "trainer/train_observer.h"

namespace mb {

class MirroredTrainer {
 public:
  // Resolves the request against the data and the machine (run_check.h: ConfigError with
  // every problem). With a link to other processes this is collective: every process checks
  // that the others got the same options and the same data (process_handshake.h).
  MirroredTrainer(const TrainConfig& config, std::shared_ptr<const DataSplit> data,
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

  const RunConfig& run_config() const { return run_.config; }
  bool is_primary() const { return run_.world.process == 0; }   // writes records, prints progress
  const std::vector<float>& final_params() const { return final_params_; }  // process 0, after run()
  // With TrainConfig::trace: every replica's sampled steps (process 0, after run(); empty when
  // the run failed, since a failed run cannot gather them).
  const std::vector<std::vector<TraceStep>>& trace() const { return trace_; }

  // For tests and tools: builds the replicas' engines instead of the registry (the devices are
  // still checked, and the communicators made for them). Before run().
  void set_engine_factory(EngineFactory factory) { engine_factory_ = std::move(factory); }

 private:
  std::vector<std::unique_ptr<Communicator>> connect() const;
  void train_replicas(std::vector<std::unique_ptr<Communicator>>& comms, const TrainObserver& observer,
                      RecordBuilder& record);
  std::function<int(int)> cpu_plan(const TrainObserver& observer) const;

  std::shared_ptr<const DataSplit> data_;
  std::shared_ptr<ProcessLink> link_;
  ResolvedRun run_;
  std::vector<float> final_params_;
  std::vector<std::vector<TraceStep>> trace_;
  std::atomic<bool> stop_{false};
  EngineFactory engine_factory_;
};

}  // namespace mb

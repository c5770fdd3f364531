// One replica's life in a run, on its own thread: its engine, rank 0's weights, the untimed
// warm-up, then lock-step epochs - its share of every global batch (step_shares.h), the
// engine's all-reduce and Adam step, the reports all-gathered with the other replicas,
// validation and the in-sync check after each epoch. The replicas of all processes meet only
// in their communicators' collectives, and every decision (stop, out of sync, new shares) is
// taken from data every rank gathered.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "backends/replica_engine.h"
#include "comm/communicator.h"
#include "records/chrome_trace.h"
#include "trainer/primary_book.h"
#include "trainer/record_builder.h"
#include "trainer/resolved_run.h"
#include "trainer/step_shares.h"

namespace mb {

using EngineFactory = std::function<std::unique_ptr<ReplicaEngine>(const DeviceSpec&, int max_batch)>;

// What this process's replica threads share during a run, in three parts by who writes them.
struct ReplicaShared {
  // Read by every replica.
  struct Inputs {
    const ResolvedRun& run;
    const DataSplit& data;
    const EngineFactory& engine_factory;        // empty: the registry's engine
    std::function<int(int local)> cpu_for;      // the CPU to pin local replica `local` to (-1: none)
    const std::atomic<bool>& stop_requested;
  };
  // One slot per local replica, written by that replica's thread only.
  struct PerReplica {
    std::vector<std::unique_ptr<Communicator>>& comms;
    std::vector<std::unique_ptr<ReplicaEngine>>& engines;
  };
  // Rank 0's running account of the run (the progress) and the run's record, whose one
  // writer is the builder (every rank may report a failure to it).
  struct Account {
    PrimaryBook& book;
    RecordBuilder& record;
  };
  // What the run leaves beside the record (rank 0, under the builder's reports' order: written
  // once, at the end of rank 0's thread).
  struct Leftovers {
    std::vector<float> final_params;            // rank 0's, unless the replicas diverged
    std::vector<std::vector<TraceStep>> trace;  // every replica's sampled steps (with run.trace)
  };

  Inputs in;
  PerReplica per_replica;
  Account account;
  Leftovers left;

  // The first failure wins; every communicator of this process is aborted, so replicas waiting
  // in a collective (here and, through the link, in the other processes) give up.
  void fail(const std::string& what);
};

// Runs local replica `local` to the end; never throws (a failure goes to shared.fail).
void run_replica(ReplicaShared& shared, int local);

}  // namespace mb

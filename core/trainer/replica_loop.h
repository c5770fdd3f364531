// One replica's life in a run, on its own thread: its engine, rank 0's weights, the untimed
// warm-up, then lock-step epochs - its share of every global batch, the engine's all-reduce
// and Adam step, the reports all-gathered with the other replicas, validation and the in-sync
// check after each epoch. The replicas of all processes meet only in their communicators'
// collectives, and every decision (stop, out of sync) is taken from data every rank gathered.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/replica_engine.h"
#include "comm/communicator.h"
#include "records/chrome_trace.h"
#include "trainer/primary_book.h"
#include "trainer/resolved_run.h"

namespace mb {

// The global batch split: replica r of n gets [begin(r), begin(r+1)) of a batch of size b.
// Shares differ by at most one sample; the first (b % n) replicas get the larger share.
int64_t replica_share_begin(int64_t batch, int replicas, int replica);

using EngineFactory = std::function<std::unique_ptr<ReplicaEngine>(const DeviceSpec&, int max_batch)>;

// What this process's replicas share during a run. Each replica writes only its own slot of
// `engines`; rank 0 alone touches the book and the record; the outcome is under the mutex.
struct ReplicaShared {
  ReplicaShared(const ResolvedRun& run, const DataSplit& data, std::vector<std::unique_ptr<Communicator>>& comms,
                std::vector<std::unique_ptr<ReplicaEngine>>& engines, const EngineFactory& engine_factory,
                std::function<int(int)> cpu_for, const std::atomic<bool>& stop_requested, PrimaryBook& book,
                RunRecord& record)
      : run(run), data(data), comms(comms), engines(engines), engine_factory(engine_factory),
        cpu_for(std::move(cpu_for)), stop_requested(stop_requested), book(book), record(record) {}

  const ResolvedRun& run;
  const DataSplit& data;
  std::vector<std::unique_ptr<Communicator>>& comms;
  std::vector<std::unique_ptr<ReplicaEngine>>& engines;
  const EngineFactory& engine_factory;        // empty: the registry's engine
  std::function<int(int local)> cpu_for;      // the CPU to pin local replica `local` to (-1: none)
  const std::atomic<bool>& stop_requested;
  PrimaryBook& book;                          // rank 0
  RunRecord& record;                          // rank 0: warm-up time, communication profile

  // The outcome.
  std::mutex mutex;
  std::string first_error, in_sync_error;
  bool stopped = false;                       // the same decision on every rank
  std::vector<float> final_params;            // rank 0's, unless the replicas diverged
  std::vector<std::vector<TraceStep>> trace;  // every replica's sampled steps (rank 0, with run.trace)

  // The first failure wins; every communicator of this process is aborted, so replicas waiting
  // in a collective (here and, through the link, in the other processes) give up.
  void fail(const std::string& what);
  bool failed();              // any thread
  std::string error();        // the first failure (any thread)
};

// Runs local replica `local` to the end; never throws (a failure goes to shared.fail).
void run_replica(ReplicaShared& shared, int local);

}  // namespace mb

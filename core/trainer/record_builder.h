// The one writer of a run's record. The trainer reports what happened, as it happens: the
// communicator it connected, the warm-up, every change of balanced shares, every epoch, a
// replica out of sync, a failure or a stop; the builder turns those reports into the
// RunRecord, and nothing else writes it. Every process has one (the others' records carry only
// the status and the error); rank 0's thread reports during the run, the trainer's own thread
// before and after it. Thread-safe, so that a stuck run's record can be taken while a replica
// thread may still report.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

class RecordBuilder {
 public:
  // Names the run after its devices and stamps its start.
  explicit RecordBuilder(const RunConfig& config);

  // The communicator the replicas use (a one-rank NCCL may have fallen back): true when it
  // differs from the one reported before.
  bool connected(const std::string& communicator);
  std::string communicator() const;
  // The untimed preparation before epoch 1, and what the engine measured and chose there.
  void warmed_up(double seconds, const CommProfile& comm, const EngineReport& engine);
  // The engine's report after an epoch (a device engine's step counts grow).
  void engine_reported(const EngineReport& engine);
  // Balanced shares from run step `step` on; returns how many changes the record holds.
  std::size_t shares_changed(int64_t step, const std::vector<int64_t>& shares);
  void epoch_ended(const EpochMetrics& epoch);
  void out_of_sync(const std::string& what);
  // A failure (the first one is the run's error) and a stop at the next step.
  void failed(const std::string& error);
  void stopped();

  bool has_failed() const;
  bool in_sync() const;
  std::string error() const;           // the first failure, else the out-of-sync message
  int epochs_done() const;

  // The record as it stands: status failed with the first error (a failure, else replicas out
  // of sync), stopped when a stop came before the last epoch, else completed.
  RunRecord snapshot() const;

 private:
  RunRecord snapshot_locked() const;

  mutable std::mutex mutex_;
  RunRecord record_;
  std::string first_error_, out_of_sync_;
  bool stopped_ = false;
};

}  // namespace mb

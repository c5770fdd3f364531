// Rank 0's view of a run: what the replicas report (all-gathered, rank order) folded into the
// running metrics, the per-replica breakdown and the progress and epoch reports the observer
// gets. Touched by rank 0's thread only.
#pragma once
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/replica_engine.h"
#include "records/run_record.h"
#include "trainer/record_builder.h"
#include "trainer/train_observer.h"

namespace mb {

// Each replica's contribution to a report (trivially copyable: all-gathered as bytes).
struct StepReport {
  BatchStats stats;      // the steps since the last report
  PhaseTimes times;      // likewise
  int32_t stop = 0;      // this process was asked to stop
  int32_t detailed = 0;  // the fields below describe this report's last step
  double grad_norm = 0;  // this replica's own gradient, before the all-reduce
  uint64_t digest = 0;   // its parameters after the step
  int64_t share_begin = 0, share_count = 0;
  PhaseTimes step_times;
  BatchStats step_stats;   // that step's own statistics (stats covers the whole report)
};

// Each replica's end of an epoch (all-gathered).
struct EpochReport {
  BatchStats val;        // its share of the validation set
  uint64_t digest = 0;   // of its parameters
  int32_t stop = 0;
  int32_t pad = 0;
};

class PrimaryBook {
 public:
  using Clock = std::chrono::steady_clock;
  // Each finished epoch goes to `record`, the run record's one writer.
  PrimaryBook(const RunConfig& rc, const TrainObserver& observer, RecordBuilder& record, int64_t steps)
      : rc_(rc), observer_(observer), record_(record), steps_(steps) {}

  const TrainObserver& observer() const { return observer_; }
  void begin_epoch(int epoch);
  void set_steps_per_report(int every) { steps_per_report_ = every; }
  // After `steps_done` steps of this epoch, `images_done` images; `step_samples` is the last
  // step's global batch (for a detailed report).
  void add(const std::vector<StepReport>& all, int64_t steps_done, int64_t images_done,
           std::span<const int32_t> step_samples);
  void end_epoch(double time_s, const std::vector<EpochReport>& all);
  double epoch_elapsed_s() const;

 private:
  StepDetail detail_of(const std::vector<StepReport>& all, std::span<const int32_t> step_samples) const;

  const RunConfig& rc_;
  const TrainObserver& observer_;
  RecordBuilder& record_;
  const int64_t steps_;
  int epoch_ = 0;
  Clock::time_point epoch_start_;
  double last_report_ = -1;
  int steps_per_report_ = 1;
  BatchStats running_;
  std::vector<PhaseTimes> replica_times_;
  std::vector<std::vector<PhaseTimes>> recent_;   // the last reports, oldest first
};

}  // namespace mb

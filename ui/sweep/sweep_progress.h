// A batch-size sweep as it proceeds in the workbench: its points (core/experiment/sweep.h),
// the records of the configurations that finished, and the one in progress with its epochs
// so far. The summary, the verdict and the exports come from the core's summarize_sweep on
// the finished records, so they are what `mirrorbench-cli sweep` says for the same runs; the
// run in progress only adds its partial numbers to the table and charts.
#pragma once
#include <QString>

#include <optional>
#include <vector>

#include "experiment/sweep.h"
#include "records/run_record.h"

namespace mb {

class SweepProgress {
 public:
  enum class RowState { Waiting, Running, Finished };
  struct Row {
    SweepPoint point;
    RowState state = RowState::Waiting;
    std::optional<SweepResult> result;   // finished, or running with at least one epoch
    int epochs_done = 0;
    bool best = false;                   // the summary's best (finished runs only)
  };

  // A new sweep: every point waiting. Throws ConfigError for impossible options.
  void start(const SweepOptions& options);
  void run_started(int index, const RunConfig& config);
  void epoch(const EpochMetrics& metrics);
  void run_finished(int index, const RunRecord& record);
  void finish(bool stopped);
  // Before any sweep: the axis the empty table and charts are laid out for (the tab's).
  void set_empty_axis(SweepAxis axis) {
    if (empty()) options_.axis = axis;
  }

  bool empty() const { return points_.empty(); }
  bool running() const { return running_; }
  bool stopped() const { return stopped_; }
  const SweepOptions& options() const { return options_; }
  const std::vector<SweepPoint>& points() const { return points_; }
  const std::vector<RunRecord>& records() const { return records_; }   // in plan order

  SweepSummary summary() const;           // the core's, over the finished records
  std::vector<Row> rows() const;          // one per point, in plan order
  QString status_text() const;            // "3 of 9 configurations done", "stopped after …"

 private:
  SweepOptions options_;
  std::vector<SweepPoint> points_;
  std::vector<RunRecord> records_;
  std::optional<RunRecord> live_;         // the run in progress: its config and epochs so far
  int live_index_ = -1;
  bool running_ = false;
  bool stopped_ = false;
};

// A point's short name, for legends and tooltips: "batch 256, lr scaled", "cnn-dense4096 on 2
// replicas", "2 replicas, simulated 1 Gbit/s (50 us)".
QString point_label(SweepAxis axis, const SweepPoint& point);

}  // namespace mb

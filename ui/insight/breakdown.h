// Where each replica's time goes, as bar charts: the breakdown (per replica per epoch, stacked
// compute, communication and waiting, from EpochMetrics::replica_times, with the epoch in
// progress from the live step reports) and the timeline (the last few steps of every replica,
// their phases laid end to end as the Chrome trace lays them out, from StepProgress::recent or
// from a run's kept trace). Honest about GPU runs, whose host does not time a step's phases.
#pragma once
#include <QString>

#include <string>
#include <vector>

#include "charts/shown_run.h"
#include "insight/bar_chart.h"
#include "records/run_record.h"
#include "trainer/train_observer.h"

namespace mb {

// The live run's epoch in progress, from its latest step report.
struct LiveEpoch {
  int epoch = 0;
  int64_t step = 0, steps = 0;
  std::vector<PhaseTimes> times;   // StepProgress::epoch_times
};
LiveEpoch live_epoch(const StepProgress& progress);

// One step of every replica.
struct TimelineStep {
  int epoch = 0;
  int64_t step = 0;                  // 1-based within its epoch (its last step when a report covers several)
  std::vector<PhaseTimes> replicas;
};

// Where a timeline comes from: the live step reports (consecutive steps) or a run's trace
// (sampled steps: every k-th of the run).
struct TimelineSource {
  std::string run_id;                // the record's id ("live" while running)
  RunConfig config;
  bool live = false;
  bool sampled = false;
  int64_t sample_every = 1;          // sampled: steps between two samples
  int steps_per_report = 1;          // a block covers this many training steps (GPUs: several)
  int64_t steps_in_epoch = 0;
  std::vector<TimelineStep> steps;   // oldest first
};
TimelineSource timeline_from_progress(const StepProgress& progress, const RunConfig& config);
// The last `count` sampled steps of a trace that write_chrome_trace wrote for `record`.
// Throws DataError when the text is no such trace.
TimelineSource timeline_from_trace(const std::string& trace_json, const RunRecord& record, int count = 6);

// The colours of the phases, shared by both charts and their legends.
QColor compute_colour();
QColor communication_colour();
QColor waiting_colour();
QColor input_colour();
QColor category_colour(int category);   // a time category's colour (util/phase_times.h), by position
QString role_word(TimeRole role);       // "compute", "communication", "waiting"

// The breakdown of the run the headlines talk about (primary_run), with its baseline's mean
// epoch first when it is shown; `live` is the epoch in progress of a live primary run. Segment
// order per bar, bottom up: compute (forward + backward + optimizer), communication (the
// exposed all-reduce), waiting (for the slowest replica).
BarChartContent build_breakdown(const std::vector<ShownRun>& runs, const LiveEpoch* live);
// The timeline of `source` (nullptr: none for the run on display, whose label is given).
BarChartContent build_timeline(const TimelineSource* source, const QString& label);

}  // namespace mb

// One run as the charts and the comparison card show it: its record, legend label, colour,
// role (baseline or not, live or finished) and its comparison with its baseline.
#pragma once
#include <QColor>
#include <QString>

#include <optional>
#include <vector>

#include "charts/running_trace.h"
#include "experiment/diagnosis.h"
#include "experiment/verdict.h"
#include "records/run_record.h"

namespace mb {

// What the scaling predictor (insight/prediction.h) expects of a run's epoch, from this
// machine's calibration, for the comparison card's "predicted 3.40 s, measured 3.60 s, +6 %".
struct PredictedEpoch {
  double epoch_s = 0;
  QString note;                    // what the model leaves out for this run (a straggler, ...)
};

// The live run carries the epochs finished so far plus running train loss/accuracy traces at
// fractional epochs (epoch e runs from x = e-1 to x = e). Its record's status means nothing
// until it finishes; `live` says it is running.
struct ShownRun {
  RunRecord record;
  QString label;
  QColor colour;
  bool baseline = false;           // drawn dashed, in grey
  bool live = false;
  RunningTrace loss_trace, acc_trace;
  std::optional<EpochTimeComparison> vs_baseline;   // for non-baseline runs with a baseline
  std::string baseline_id;                           // which shown run that baseline is (its record id)
  QString baseline_label;
  std::optional<Diagnosis> diagnosis;                // what bounds it (several replicas, a breakdown)
  std::optional<PredictedEpoch> predicted;           // with a calibration that applies to the run
  QString no_prediction;                             // else why not, when there is a calibration
};

// The run the headlines and the comparison card talk about: the first run that is not a
// baseline, else the first run; nullptr when there are none.
const ShownRun* primary_run(const std::vector<ShownRun>& runs);
// The baseline `run` is compared with, among `runs` (by record id): the one every header, the
// card and the breakdown name for it; nullptr when it has none or it is not shown.
const ShownRun* baseline_of(const std::vector<ShownRun>& runs, const ShownRun& run);

// Distinct, colour-blind-friendly colours for runs; greys for baselines.
QColor run_colour(int index);
QColor baseline_colour(int index);

}  // namespace mb

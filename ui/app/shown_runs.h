// What the charts show: the live run first, then the chosen runs from the history (in the
// order given), then each one's baseline, with legend labels, colours and comparisons.
#pragma once
#include <string>
#include <vector>

#include "charts/shown_run.h"
#include "insight/prediction.h"

namespace mb {

class HistoryModel;

// `live` (may be null) is the run in progress with its traces; `ids` the history's runs to
// show. Baselines come last, so the first run is the one the headlines talk about.
std::vector<ShownRun> shown_runs(const ShownRun* live, const std::vector<std::string>& ids,
                                 const HistoryModel& history);

// Fills ShownRun::diagnosis of every run that is no baseline (experiment/diagnosis.h): with its
// baseline, this machine's calibration of its model (when there is one) and the baseline of
// its settings before that one (a drifting baseline is flagged).
void add_diagnoses(std::vector<ShownRun>& runs, const HistoryModel& history, const CalibrationLookup& calibration_of);

}  // namespace mb

// What the charts show: the live run first, then the chosen runs from the history (in the
// order given), then each one's baseline, with legend labels, colours and comparisons.
#pragma once
#include <string>
#include <vector>

#include "charts/shown_run.h"

namespace mb {

class HistoryModel;

// `live` (may be null) is the run in progress with its traces; `ids` the history's runs to
// show. Baselines come last, so the first run is the one the headlines talk about.
std::vector<ShownRun> shown_runs(const ShownRun* live, const std::vector<std::string>& ids,
                                 const HistoryModel& history);

}  // namespace mb

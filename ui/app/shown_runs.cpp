// Assembling the runs on the charts from the live run and the history.
#include "app/shown_runs.h"

#include <algorithm>

#include "common/format.h"
#include "history/history_model.h"

namespace mb {

std::vector<ShownRun> shown_runs(const ShownRun* live, const std::vector<std::string>& ids,
                                 const HistoryModel& history) {
  std::vector<RunRecord> records;
  std::vector<bool> is_live;
  auto add = [&](const RunRecord& r, bool l) {
    for (const auto& have : records) {
      if (have.id == r.id) return;
    }
    records.push_back(r);
    is_live.push_back(l);
  };
  if (live) add(live->record, true);
  for (const auto& id : ids) {
    if (const RunRecord* r = history.find(id)) add(*r, false);
  }
  std::vector<std::string> baseline_of(records.size());
  const std::size_t primaries = records.size();
  for (std::size_t i = 0; i < primaries; ++i) {
    const RunRecord* b = history.baseline_for(records[i].config);
    if (!b || b->id == records[i].id) continue;
    baseline_of[i] = b->id;
    add(*b, false);
  }
  baseline_of.resize(records.size());

  std::vector<const RunRecord*> pointers;
  std::vector<bool> baselines;
  std::vector<int> compared_with(records.size(), -1);
  for (std::size_t i = 0; i < records.size(); ++i) {
    pointers.push_back(&records[i]);
    baselines.push_back(!is_live[i] && history.is_baseline(records[i]));
    for (std::size_t k = 0; k < records.size(); ++k)
      if (!baseline_of[i].empty() && records[k].id == baseline_of[i]) compared_with[i] = int(k);
  }
  const std::vector<QString> labels = short_labels(pointers, baselines, compared_with);

  std::vector<ShownRun> shown;
  int colour = 0, grey = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    ShownRun s;
    s.record = records[i];
    s.live = is_live[i];
    s.label = labels[i];
    s.baseline = baselines[i];
    s.colour = s.baseline ? baseline_colour(grey++) : run_colour(colour++);
    if (s.live) {
      s.loss_trace = live->loss_trace;
      s.acc_trace = live->acc_trace;
    }
    if (!baseline_of[i].empty()) {
      const RunRecord* b = history.find(baseline_of[i]);
      for (std::size_t k = 0; k < records.size(); ++k) {
        if (records[k].id == baseline_of[i]) s.baseline_label = labels[k];
      }
      s.vs_baseline = compare_epoch_time(*b, records[i]);
    }
    shown.push_back(std::move(s));
  }
  std::stable_partition(shown.begin(), shown.end(), [](const ShownRun& s) { return !s.baseline; });
  return shown;
}

}  // namespace mb

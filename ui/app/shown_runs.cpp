// Assembling the runs on the charts from the live run and the history.
#include "app/shown_runs.h"

#include <algorithm>

#include "model/model_text.h"
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
  // Each run's own baseline (the one it was compared with, kept: experiment/baseline.h), added
  // when it is not shown already; a run shown as some run's baseline is drawn as a baseline.
  std::vector<std::string> baseline_of(records.size());
  const std::size_t primaries = records.size();
  for (std::size_t i = 0; i < primaries; ++i) {
    const RunRecord* b = is_live[i] ? history.baseline_for(records[i].config) : history.baseline_of(records[i]);
    if (!b || b->id == records[i].id) continue;
    baseline_of[i] = b->id;
    add(*b, false);
  }
  baseline_of.resize(records.size());
  auto is_a_baseline = [&](std::size_t i) {
    return !is_live[i] && (history.is_baseline(records[i]) ||
                           std::find(baseline_of.begin(), baseline_of.end(), records[i].id) != baseline_of.end());
  };

  std::vector<const RunRecord*> pointers;
  std::vector<bool> baselines;
  std::vector<int> compared_with(records.size(), -1);
  for (std::size_t i = 0; i < records.size(); ++i) {
    pointers.push_back(&records[i]);
    baselines.push_back(is_a_baseline(i));
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
      s.baseline_id = baseline_of[i];
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

namespace {

// The run that was the baseline of `baseline`'s settings before it (by start time), or nullptr.
const RunRecord* previous_baseline(const HistoryModel& history, const RunRecord& baseline) {
  const std::string key = baseline_key(baseline.config);
  const RunRecord* previous = nullptr;
  for (const RunRecord& r : history.runs())
    if (r.id != baseline.id && can_be_baseline(r) && baseline_key(r.config) == key &&
        r.config.start_time < baseline.config.start_time &&
        (!previous || r.config.start_time > previous->config.start_time))
      previous = &r;
  return previous;
}

}  // namespace

void add_diagnoses(std::vector<ShownRun>& runs, const HistoryModel& history, const CalibrationLookup& calibration_of) {
  for (ShownRun& s : runs) {
    if (s.baseline) continue;
    const ShownRun* base = baseline_of(runs, s);
    const MachineCalibration* m = calibration_of ? calibration_of(model_text(s.record.config.model)) : nullptr;
    // A calibration of other kernels or of GPUs says nothing about this run's step.
    const bool applies = m && prediction_mismatch(*m, s.record.config).isEmpty();
    s.diagnosis = diagnose(s.record, base ? &base->record : nullptr, applies ? &m->calibration : nullptr,
                           base ? previous_baseline(history, base->record) : nullptr);
  }
}

}  // namespace mb

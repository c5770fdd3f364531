// The sweep in progress (see sweep_progress.h).
#include "sweep/sweep_progress.h"

#include <QObject>

namespace mb {

void SweepProgress::start(const SweepOptions& options) {
  points_ = sweep_points(options);   // throws first: an impossible sweep leaves the last one shown
  options_ = options;
  records_.clear();
  live_.reset();
  live_index_ = -1;
  running_ = true;
  stopped_ = false;
}

void SweepProgress::run_started(int index, const RunConfig& config) {
  if (index < 0 || index >= int(points_.size())) return;
  live_index_ = index;
  live_ = RunRecord{};
  live_->config = config;
}

void SweepProgress::epoch(const EpochMetrics& m) {
  if (live_) live_->epochs.push_back(m);
}

void SweepProgress::run_finished(int index, const RunRecord& record) {
  // Records pair with points by position (summarize_sweep); a plan runs them in order.
  if (index == int(records_.size()) && index < int(points_.size())) records_.push_back(record);
  live_.reset();
  live_index_ = -1;
}

void SweepProgress::finish(bool stopped) {
  running_ = false;
  stopped_ = stopped;
  live_.reset();
  live_index_ = -1;
}

SweepSummary SweepProgress::summary() const {
  return summarize_sweep(points_, records_, options_.target_val_acc, options_.axis);
}

std::vector<SweepProgress::Row> SweepProgress::rows() const {
  const SweepSummary s = summary();
  std::vector<Row> rows;
  for (std::size_t i = 0; i < points_.size(); ++i) {
    Row row;
    row.point = points_[i];
    if (i < s.results.size()) {
      row.state = RowState::Finished;
      row.result = s.results[i];
      row.epochs_done = int(records_[i].epochs.size());
      row.best = int(i) == s.best;
    } else if (live_ && int(i) == live_index_) {
      row.state = RowState::Running;
      row.epochs_done = int(live_->epochs.size());
      if (!live_->epochs.empty()) row.result = summarize_run(points_[i], *live_, options_.target_val_acc);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

QString SweepProgress::status_text() const {
  if (empty()) return {};
  const int done = int(records_.size()), all = int(points_.size());
  if (running_) return QObject::tr("%1 of %2 configurations done").arg(done).arg(all);
  if (stopped_) return QObject::tr("Stopped after %1 of %2 configurations").arg(done).arg(all);
  if (done < all) return QObject::tr("Ended after %1 of %2 configurations (see Log)").arg(done).arg(all);
  return QObject::tr("All %1 configurations done").arg(all);
}

QString point_label(SweepAxis axis, const SweepPoint& p) {
  if (axis != SweepAxis::Batch) return QString::fromStdString(point_name(axis, p));
  return p.scale_lr ? QObject::tr("batch %1, lr scaled").arg(p.global_batch) : QObject::tr("batch %1").arg(p.global_batch);
}

}  // namespace mb

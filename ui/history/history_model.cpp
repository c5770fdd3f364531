// Table model over the stored runs.
#include "history/history_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/format.h"
#include "experiment/verdict.h"

namespace mb {
namespace {

// A baseline as the Speedup column names it: its start time ("17:53"), or its id's tail.
QString baseline_time(const RunRecord& b) {
  const QString date = format_date(b.config.start_time);   // "2026-12-03 17:53"
  return date.size() > 11 ? date.mid(11) : QString::fromStdString(b.id).right(4);
}

}  // namespace

HistoryModel::HistoryModel(RunStore store, QObject* parent) : QAbstractTableModel(parent), store_(std::move(store)) {}

std::vector<std::string> HistoryModel::reload() {
  beginResetModel();
  auto loaded = store_.load_runs();
  runs_ = std::move(loaded.runs);
  book_ = store_.load_book(&loaded.warnings);
  reindex();
  endResetModel();
  for (const auto& w : loaded.warnings) spdlog::warn("{}", w);
  emit runs_changed();
  return loaded.warnings;
}

bool HistoryModel::has_trace(const std::string& id) const {
  std::error_code ec;
  try {
    return std::filesystem::is_regular_file(store_.trace_file_for(id), ec);
  } catch (const std::exception&) {   // an id that is no file name has no trace either
    return false;
  }
}

const RunRecord* HistoryModel::find(const std::string& id) const {
  const int row = row_of(id);
  return row < 0 ? nullptr : &runs_[std::size_t(row)];
}

int HistoryModel::row_of(const std::string& id) const {
  for (std::size_t i = 0; i < runs_.size(); ++i) {
    if (runs_[i].id == id) return int(i);
  }
  return -1;
}

void HistoryModel::reindex() { baselines_ = index_baselines(runs_, book_); }

const RunRecord* HistoryModel::baseline_for(const RunConfig& config) const {
  const std::optional<std::size_t> row = baselines_.for_config(config);
  return row ? &runs_[*row] : nullptr;
}

const RunRecord* HistoryModel::baseline_of(const RunRecord& r) const {
  if (const int row = row_of(r.id); row >= 0) return baseline_of_row(row);
  return baseline_for(r.config);
}

bool HistoryModel::is_baseline(const RunRecord& r) const {
  const RunRecord* b = baseline_for(r.config);
  return b && b->id == r.id;
}

const RunRecord* HistoryModel::baseline_of_row(int row) const {
  const std::optional<std::size_t> b = baselines_.of_run[std::size_t(row)];
  return b ? &runs_[*b] : nullptr;
}

bool HistoryModel::is_baseline_row(int row) const { return baselines_.is_baseline(std::size_t(row)); }

bool HistoryModel::add(const RunRecord& record, QString* error) {
  bool saved = true;
  try {
    store_.save(record);
  } catch (const std::exception& e) {
    saved = false;
    spdlog::error("Could not save run {}: {}", record.id, e.what());
    if (error) *error = QString::fromStdString(e.what());
  }
  add_saved(record);
  return saved;
}

void HistoryModel::add_saved(const RunRecord& record) {
  // Whoever saved it wrote down its baseline, or pinned it as one.
  book_ = store_.load_book();
  if (const int row = row_of(record.id); row >= 0) {   // re-saved run: replace in place
    runs_[std::size_t(row)] = record;
    reindex();
    emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  } else {
    beginInsertRows({}, rowCount(), rowCount());
    runs_.push_back(record);
    reindex();
    endInsertRows();
  }
  // A new run can change which run is the baseline, and so every speedup.
  emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  emit runs_changed();
}

void HistoryModel::remove(const std::vector<std::string>& ids) {
  for (const auto& id : ids) {
    const int row = row_of(id);
    if (row < 0) continue;
    store_.remove(id);
    beginRemoveRows({}, row, row);
    runs_.erase(runs_.begin() + row);
    reindex();
    endRemoveRows();
    spdlog::info("Deleted run {}", id);
  }
  if (rowCount() > 0) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  emit runs_changed();
}

bool HistoryModel::rename(const std::string& id, const QString& name, QString* error) {
  const int row = row_of(id);
  if (row < 0) return false;
  RunRecord updated = runs_[std::size_t(row)];
  updated.name = name.trimmed().toStdString();
  try {
    store_.save(updated);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    spdlog::error("Could not rename run {}: {}", id, e.what());
    return false;
  }
  runs_[std::size_t(row)] = std::move(updated);
  reindex();
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  emit runs_changed();
  return true;
}

bool HistoryModel::pin_baseline(const std::string& id, QString* error) {
  const RunRecord* r = find(id);
  if (!r) return false;
  // The user's pin re-scores every run of its configuration (baseline.h).
  BaselineBook book = book_;
  mb::pin_baseline(book, runs_, *r);
  try {
    store_.save_book(book);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    spdlog::error("Could not save baseline pin: {}", e.what());
    return false;
  }
  book_ = std::move(book);
  reindex();
  spdlog::info("Pinned {} as baseline for {}", id, describe_baseline_key(r->config));
  emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
  emit runs_changed();
  return true;
}

int HistoryModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(runs_.size()); }
int HistoryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant HistoryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* const names[] = {"Name",         "Date",          "Devices",
                                      "Batch",        "Epochs",        "Mean epoch time",
                                      "Best val acc", "vs baseline",   "Status"};
  static const char* const tips[] = {
      "Double-click to rename. ★ marks the baseline of its configuration.",
      "When the run started (local time)",
      "Devices the replicas ran on",
      "Global batch (per-replica batch in brackets when it differs)",
      "Epochs completed / planned",
      "Mean training wall time per epoch (validation not included)",
      "Best validation accuracy over the epochs",
      "Mean epoch time against the single-device baseline of the same data set, model and batch",
      "completed, stopped (by the user) or failed"};
  if (role == Qt::DisplayRole && section >= 0 && section < ColumnCount) return tr(names[section]);
  if (role == Qt::ToolTipRole && section >= 0 && section < ColumnCount) return tr(tips[section]);
  return {};
}

Qt::ItemFlags HistoryModel::flags(const QModelIndex& index) const {
  auto f = QAbstractTableModel::flags(index);
  if (index.column() == Name) f |= Qt::ItemIsEditable;
  return f;
}

bool HistoryModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || index.column() != Name || !index.isValid()) return false;
  return rename(runs_[std::size_t(index.row())].id, value.toString());
}

QVariant HistoryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const int row = index.row();
  const RunRecord& r = runs_[std::size_t(row)];
  const int col = index.column();
  switch (role) {
    case Qt::DisplayRole: return display(row, col);
    case Qt::EditRole: return col == Name ? QVariant(run_label(r)) : display(row, col);
    case kSortRole: return sort_value(row, col);
    case kIdRole: return QString::fromStdString(r.id);
    case Qt::ToolTipRole: return tooltip(row);
    case Qt::TextAlignmentRole:
      if (col == Batch || col == Epochs || col == MeanEpochTime || col == BestValAcc || col == Speedup)
        return int(Qt::AlignRight | Qt::AlignVCenter);
      return int(Qt::AlignLeft | Qt::AlignVCenter);
    case Qt::FontRole:
      if (is_baseline_row(row)) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::ForegroundRole:
      if (col == Status && r.status == RunStatus::Failed) return QBrush(QColor(0xc6, 0x28, 0x28));
      if (col == Status && r.status == RunStatus::Stopped) return QBrush(QColor(0xb2, 0x6a, 0x00));
      if (col == Speedup && !is_baseline_row(row)) {
        if (const RunRecord* b = baseline_of_row(row)) {
          if (auto cmp = compare_epoch_time(*b, r))
            return QBrush(cmp->reduction >= 0 ? QColor(0x2e, 0x7d, 0x32) : QColor(0xc6, 0x28, 0x28));
        }
      }
      return {};
    default:
      return {};
  }
}

QVariant HistoryModel::display(int row, int col) const {
  const RunRecord& r = runs_[std::size_t(row)];
  const RunConfig& c = r.config;
  switch (col) {
    case Name: return (is_baseline_row(row) ? QStringLiteral("\u2605 ") : QString()) + run_label(r);
    case Date: return format_date(c.start_time);
    case Devices:
      return devices_text(c) + (c.simulated ? tr(" (simulated)") : QString()) + what_if_tags(c);
    case Batch:
      return c.replicas > 1 ? QStringLiteral("%1 (%2)").arg(c.global_batch).arg(c.per_replica_batch)
                            : QString::number(c.global_batch);
    case Epochs:
      return int(r.epochs.size()) == c.epochs ? QString::number(c.epochs)
                                              : QStringLiteral("%1/%2").arg(r.epochs.size()).arg(c.epochs);
    case MeanEpochTime: return r.epochs.empty() ? QStringLiteral("–") : format_seconds(r.mean_epoch_time());
    case BestValAcc: return r.epochs.empty() ? QStringLiteral("–") : format_percent(r.best_val_acc(), 2);
    case Speedup: {
      if (is_baseline_row(row)) return tr("baseline");
      const RunRecord* b = baseline_of_row(row);
      if (!b) return QStringLiteral("–");
      auto cmp = compare_epoch_time(*b, r);
      if (!cmp) return QStringLiteral("–");
      // Which baseline: its start time, the history's Date column (the tooltip names it).
      return QStringLiteral("%1 (%2) vs %3")
          .arg(format_speedup(cmp->speedup), format_reduction(cmp->reduction), baseline_time(*b));
    }
    case Status: return QString::fromUtf8(to_string(r.status));
    default:
      return {};
  }
}

QVariant HistoryModel::sort_value(int row, int col) const {
  const RunRecord& r = runs_[std::size_t(row)];
  switch (col) {
    case Name: return run_label(r).toLower();
    case Date: return QString::fromStdString(r.config.start_time);
    case Devices: return devices_text(r.config);
    case Batch: return qlonglong(r.config.global_batch);
    case Epochs: return int(r.epochs.size());
    case MeanEpochTime: return r.mean_epoch_time();
    case BestValAcc: return r.best_val_acc();
    case Speedup: {
      const RunRecord* b = baseline_of_row(row);
      auto cmp = b ? compare_epoch_time(*b, r) : std::nullopt;
      return cmp ? cmp->speedup : 0.0;
    }
    case Status: return QString::fromUtf8(to_string(r.status));
    default: return {};
  }
}

QString HistoryModel::tooltip(int row) const {
  const RunRecord& r = runs_[std::size_t(row)];
  const RunConfig& c = r.config;
  QString tip = QStringLiteral("<b>%1</b><br>id %2<br>").arg(run_label(r).toHtmlEscaped(), QString::fromStdString(r.id));
  tip += tr("%1 replica(s) on %2, %3 backend, %4 communicator<br>")
             .arg(c.replicas)
             .arg(devices_text(c), QString::fromUtf8(to_string(c.backend)), QString::fromStdString(c.communicator));
  if (c.processes > 1) {
    QStringList hosts;
    for (const auto& h : c.hosts) hosts << QString::fromStdString(h).toHtmlEscaped();
    tip += tr("%1 processes × %2 replica(s) on %3<br>").arg(c.processes).arg(c.replicas_per_process).arg(hosts.join(", "));
  }
  for (const QString& line : scenario_sentences(c))
    tip += QStringLiteral("<font color='#b71c1c'>%1 (a demonstration)</font><br>").arg(line.toHtmlEscaped());
  tip += tr("global batch %1, %2 per replica; lr %3%4; seed %5<br>")
             .arg(c.global_batch)
             .arg(c.per_replica_batch)
             .arg(c.learning_rate)
             .arg(c.scale_lr ? tr(" (scaled from %1)").arg(c.base_learning_rate) : QString())
             .arg(qulonglong(c.seed));
  tip += tr("%1: %2 training / %3 validation images")
             .arg(QString::fromStdString(c.dataset))
             .arg(c.train_size)
             .arg(c.val_size);
  if (const RunRecord* b = baseline_of_row(row); b && b->id != r.id)
    tip += tr("<br>measured against %1 of %2 (%3)%4")
               .arg(run_label(*b).toHtmlEscaped(), format_date(b->config.start_time), QString::fromStdString(b->id),
                    baselines_.kept[std::size_t(row)] ? tr(", the baseline it was compared with") : QString());
  if (has_trace(r.id)) tip += tr("<br>kept its Chrome trace (Export trace…)");
  if (!r.replicas_in_sync) tip += tr("<br><font color='#c62828'>replicas diverged</font>");
  if (!r.error.empty()) tip += tr("<br><font color='#c62828'>%1</font>").arg(QString::fromStdString(r.error).toHtmlEscaped());
  return tip;
}

}  // namespace mb

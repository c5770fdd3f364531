// Sweep table model (see sweep_table_model.h).
#include "sweep/sweep_table_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include "common/format.h"

namespace mb {

SweepTableModel::SweepTableModel(QObject* parent) : QAbstractTableModel(parent) {}

std::vector<int> SweepTableModel::columns_for(SweepAxis axis) {
  if (axis == SweepAxis::Batch) return {Batch, Scaling, LearningRate, EpochTime, ValAcc, TimeToTarget, EpochsToTarget, State};
  if (axis == SweepAxis::Remedy) return {Link, Remedy, Replicas, EpochTime, SpeedUp, ValAcc, State};
  return {Model, Link, Replicas, EpochTime, SpeedUp, ValAcc, State};
}

bool SweepTableModel::left_aligned(int column) {
  return column == State || column == Scaling || column == Model || column == Link || column == Remedy;
}

void SweepTableModel::set_progress(const SweepProgress& progress) {
  beginResetModel();
  rows_ = progress.rows();
  options_ = progress.options();
  endResetModel();
}

int SweepTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int SweepTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QString SweepTableModel::text(int row, int column) const {
  if (row < 0 || row >= int(rows_.size())) return {};
  const SweepProgress::Row& r = rows_[std::size_t(row)];
  const SweepPoint& p = r.point;
  const bool finished = r.state == SweepProgress::RowState::Finished;
  switch (column) {
    case Batch: return QString::number(p.global_batch);
    case Scaling:
      return p.scale_lr ? tr("scaled \u00d7%1").arg(double(p.global_batch) / double(options_.reference_batch), 0, 'g', 4)
                        : tr("fixed");
    case LearningRate: return QString::number(p.lr, 'g', 6);
    case Model: return QString::fromStdString(p.model.name());
    case Link: return p.replicas == 1 ? tr("none (one replica)") : QString::fromStdString(link_name(p.link));
    case Remedy: return p.replicas == 1 ? tr("none (the base)") : QString::fromStdString(remedy_name(p.remedy));
    case Replicas: return QString::number(p.replicas);
    case SpeedUp:
      if (r.result && r.result->speedup) return tr("%1×").arg(*r.result->speedup, 0, 'f', 2);
      return p.replicas == 1 && r.result ? tr("1× (the base)") : QStringLiteral("–");
    case EpochTime: return r.result && r.result->epoch_s > 0 ? format_seconds(r.result->epoch_s) : QStringLiteral("–");
    case ValAcc: return r.result ? format_percent(r.result->val_acc, 2) : QStringLiteral("–");
    case TimeToTarget:
      if (r.result && r.result->time_to_target_s) return format_seconds(*r.result->time_to_target_s);
      return finished ? tr("not reached") : QStringLiteral("–");
    case EpochsToTarget:
      if (r.result && r.result->epochs_to_target) return QString::number(*r.result->epochs_to_target);
      return QStringLiteral("–");
    case State:
      switch (r.state) {
        case SweepProgress::RowState::Waiting: return tr("waiting");
        case SweepProgress::RowState::Running:
          return tr("running · epoch %1/%2").arg(r.epochs_done + 1).arg(options_.base.epochs);
        case SweepProgress::RowState::Finished: {
          const QString status = QString::fromUtf8(to_string(r.result->status));
          return r.best ? tr("\u2605 best · %1").arg(status) : status;
        }
      }
  }
  return {};
}

QVariant SweepTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= int(rows_.size())) return {};
  const SweepProgress::Row& r = rows_[std::size_t(index.row())];
  switch (role) {
    case Qt::DisplayRole: return text(index.row(), index.column());
    case Qt::TextAlignmentRole:
      return left_aligned(index.column()) ? QVariant(int(Qt::AlignLeft | Qt::AlignVCenter))
                                          : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
    case Qt::FontRole:
      if (r.best || r.state == SweepProgress::RowState::Running) {
        QFont f;
        f.setBold(r.best);
        f.setItalic(r.state == SweepProgress::RowState::Running);
        return f;
      }
      return {};
    case Qt::BackgroundRole:
      if (r.best) return QBrush(QColor(0xc8, 0xe6, 0xc9));
      if (r.state == SweepProgress::RowState::Running) return QBrush(QColor(0xff, 0xf8, 0xe1));
      return {};
    case Qt::ForegroundRole:
      if (r.state == SweepProgress::RowState::Waiting) return QBrush(QColor(0x75, 0x75, 0x75));
      if (r.result && r.result->status == RunStatus::Failed) return QBrush(QColor(0xb7, 0x1c, 0x1c));
      return {};
    case Qt::ToolTipRole:
      if (index.column() == Scaling)
        return r.point.scale_lr ? tr("Linear scaling rule: the learning rate grows with the batch (lr × batch / %1)")
                                      .arg(options_.reference_batch)
                                : tr("The same learning rate for every batch size");
      if (index.column() == EpochTime) return tr("Steady-state training time per epoch (median of epochs 2 and later)");
      if (index.column() == SpeedUp)
        return tr("One replica's time per epoch (the same model) over this configuration's: below 1, more replicas "
                  "made training slower");
      if (index.column() == Remedy && r.point.replicas > 1)
        return is_sweep_remedy(r.point.remedy)
                   ? tr("What this run changed about its gradient exchange or its input pipeline; the accuracy beside it is its "
                        "price")
                   : tr("The same replicas with nothing changed: the run each remedy is compared with");
      if (index.column() == Link && r.point.link.gbit > 0)
        return tr("Each gradient all-reduce lasts at least what a ring over this link would take (a simulated link)");
      if (index.column() == TimeToTarget)
        return tr("Training time until the first epoch whose validation accuracy reached the target");
      if (r.result && !r.result->run_id.empty()) return tr("Run %1").arg(QString::fromStdString(r.result->run_id));
      return {};
  }
  return {};
}

QVariant SweepTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  const QString target = format_percent(options_.target_val_acc, 1);
  switch (section) {
    case Batch: return tr("Global batch");
    case Scaling: return tr("Learning rate rule");
    case LearningRate: return tr("Learning rate");
    case Model: return tr("Model");
    case Link: return tr("Link");
    case Remedy: return tr("Remedy");
    case Replicas: return tr("Replicas");
    case SpeedUp: return tr("Speed-up");
    case EpochTime: return tr("Time per epoch");
    case ValAcc: return tr("Val. accuracy");
    case TimeToTarget: return tr("Time to %1").arg(target);
    case EpochsToTarget: return tr("Epochs to %1").arg(target);
    case State: return tr("State");
  }
  return {};
}

}  // namespace mb

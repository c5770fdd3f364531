// The sweep's table: one row per configuration, the best one bold on green. Over the batch:
// batch, lr rule, lr, time per epoch, validation accuracy, time and epochs to the target,
// state; over the model or the link: model, link, replicas, time per epoch, speed-up,
// validation accuracy, state; over the remedy: the link, the remedy and the same measures
// (columns_for).
#pragma once
#include <QAbstractTableModel>

#include "sweep/sweep_progress.h"

namespace mb {

class SweepTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Batch, Scaling, LearningRate, Model, Link, Remedy, Replicas, EpochTime, SpeedUp, ValAcc, TimeToTarget, EpochsToTarget,
    State,
    kColumns
  };
  // The columns a sweep along `axis` shows, in order (the view hides the others).
  static std::vector<int> columns_for(SweepAxis axis);
  static bool left_aligned(int column);

  explicit SweepTableModel(QObject* parent = nullptr);

  // Takes a fresh copy of the rows (the sweep changes at most once per epoch).
  void set_progress(const SweepProgress& progress);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  // The same cells as text, for the PNG export's table and the tests.
  QString text(int row, int column) const;

 private:
  std::vector<SweepProgress::Row> rows_;
  SweepOptions options_;
};

}  // namespace mb

// The sweep's table: one row per configuration (batch, lr rule, lr, time per epoch, validation
// accuracy, time and epochs to the target, state), the best one bold on green.
#pragma once
#include <QAbstractTableModel>

#include "sweep/sweep_progress.h"

namespace mb {

class SweepTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Batch, Scaling, LearningRate, EpochTime, ValAcc, TimeToTarget, EpochsToTarget, State, kColumns };

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

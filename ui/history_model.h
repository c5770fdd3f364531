// The run history as a table model: every stored run, its baseline comparison and its
// status. Edits (rename, delete, pin) go straight to the RunStore on disk.
#pragma once
#include <QAbstractTableModel>

#include <map>
#include <string>
#include <vector>

#include "records/run_record.h"
#include "run_store.h"

namespace mb {

class HistoryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Date, Devices, Batch, Epochs, MeanEpochTime, BestValAcc, Speedup, Status, ColumnCount };
  static constexpr int kSortRole = Qt::UserRole + 1;   // numbers/ISO dates for sorting
  static constexpr int kIdRole = Qt::UserRole + 2;     // the run id of a row

  explicit HistoryModel(RunStore store, QObject* parent = nullptr);

  // (Re)reads the store; returns one warning per file skipped.
  std::vector<std::string> reload();

  const RunStore& store() const { return store_; }
  const std::vector<RunRecord>& runs() const { return runs_; }
  const std::map<std::string, std::string>& pins() const { return pins_; }
  const RunRecord* find(const std::string& id) const;
  int row_of(const std::string& id) const;

  // The baseline for a run/configuration (see baseline.h), or nullptr.
  const RunRecord* baseline_for(const RunConfig& config) const;
  bool is_baseline(const RunRecord& record) const;

  // Saves and appends a finished run; false (with *error) when the file could not be written
  // (the run still appears, so the user can export it).
  bool add(const RunRecord& record, QString* error = nullptr);
  void remove(const std::vector<std::string>& ids);
  bool rename(const std::string& id, const QString& name, QString* error = nullptr);
  bool pin_baseline(const std::string& id, QString* error = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;

 signals:
  void runs_changed();   // any add/remove/rename/pin: charts and summaries refresh

 private:
  QVariant display(const RunRecord& r, int column) const;
  QVariant sort_value(const RunRecord& r, int column) const;
  QString tooltip(const RunRecord& r) const;

  RunStore store_;
  std::vector<RunRecord> runs_;
  std::map<std::string, std::string> pins_;
};

}  // namespace mb

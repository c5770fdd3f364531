// The run history as a table model: every stored run, its baseline comparison and its
// status. Edits (rename, delete, pin) go straight to the RunStore on disk.
#pragma once
#include <QAbstractTableModel>

#include <string>
#include <vector>

#include "experiment/baseline.h"
#include "experiment/run_store.h"
#include "records/run_record.h"

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
  const BaselineBook& book() const { return book_; }
  const RunRecord* find(const std::string& id) const;
  int row_of(const std::string& id) const;
  // Whether the run kept a Chrome trace beside its record (RunStore::trace_file_for).
  bool has_trace(const std::string& id) const;

  // The baseline a new run of a configuration is compared with (experiment/baseline.h), or
  // nullptr; the baseline a stored run is measured against (the one it was compared with,
  // kept; a run not in the history: its configuration's); whether a run is its
  // configuration's baseline now. Map lookups: the baselines are worked out once per change
  // of the runs or the book (index_baselines()).
  const RunRecord* baseline_for(const RunConfig& config) const;
  const RunRecord* baseline_of(const RunRecord& record) const;
  bool is_baseline(const RunRecord& record) const;

  // Saves and appends a finished run; false (with *error) when the file could not be written
  // (the run still appears, so the user can export it).
  bool add(const RunRecord& record, QString* error = nullptr);
  // Appends a run someone else saved (the plan executor), with the store's baseline book as it is now.
  void add_saved(const RunRecord& record);
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
  QVariant display(int row, int column) const;
  QVariant sort_value(int row, int column) const;
  QString tooltip(int row) const;
  // Recomputes baselines_. Called after every change to runs_ or book_, before the views are
  // told (a sorting proxy asks for data while rows are inserted).
  void reindex();
  const RunRecord* baseline_of_row(int row) const;
  bool is_baseline_row(int row) const;

  RunStore store_;
  std::vector<RunRecord> runs_;
  BaselineBook book_;
  BaselineIndex baselines_;   // positions are rows
};

}  // namespace mb

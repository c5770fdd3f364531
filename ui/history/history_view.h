// The Runs tab: the run-history table with its actions (select runs to overlay them on the
// charts, pin a baseline, rename, delete, export the selection as CSV, export a run's Chrome
// trace) beside the tab's title, where the tab bar has room, so the table keeps its height for
// rows; and beside it the pages the window adds (the Log).
#pragma once
#include <QStringList>
#include <QWidget>

#include <string>
#include <vector>

class QTabWidget;
class QTableView;
class QSortFilterProxyModel;
class QPushButton;

namespace mb {

class HistoryModel;

class HistoryView : public QWidget {
  Q_OBJECT
 public:
  explicit HistoryView(HistoryModel* model, QWidget* parent = nullptr);

  std::vector<std::string> selected_ids() const;     // newest first, as the table shows them
  void select_ids(const std::vector<std::string>& ids);

  // Another page beside the Runs tab (the window's Log); the runs' actions show on theirs only.
  void add_page(QWidget* page, const QString& title);

  // Rows the table always has room for: its minimum height holds them, with the header.
  static constexpr int kMinimumRows = 4;

 signals:
  void selection_changed();
  void export_csv_requested();
  void export_trace_requested();   // the one selected run kept a trace

 private:
  void update_actions();
  void fit_columns();
  void pin_selected();
  void rename_selected();
  void delete_selected();
  void show_context_menu(const QPoint& pos);

  HistoryModel* model_;
  QSortFilterProxyModel* proxy_;
  QTabWidget* tabs_;
  QTableView* table_;
  QWidget* actions_;                       // the hint and the buttons, beside the tabs' titles
  QPushButton* pin_button_;
  QPushButton* rename_button_;
  QPushButton* delete_button_;
  QPushButton* csv_button_;
  QPushButton* trace_button_;
};

}  // namespace mb

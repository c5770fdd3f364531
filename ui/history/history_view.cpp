// Run-history table widget.
#include "history/history_view.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

#include "common/format.h"
#include "history/history_model.h"

namespace mb {

namespace {

// The widest the devices column grows to fit its contents, in characters: its text grows with
// a run's what-if tags ("cpu:2 · what-if cnn-dense4096 · simulated link 1 Gbit/s").
constexpr int kWidestDevicesChars = 16;

}  // namespace

HistoryView::HistoryView(HistoryModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(HistoryModel::kSortRole);

  table_ = new QTableView(this);
  table_->setObjectName("history_table");
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->setSortingEnabled(true);
  table_->sortByColumn(HistoryModel::Date, Qt::DescendingOrder);
  table_->setAlternatingRowColors(true);
  table_->setContextMenuPolicy(Qt::CustomContextMenu);
  table_->setWordWrap(false);
  // Rows of one line of text and half a line of air (the style's default is twice the line),
  // and room for kMinimumRows of them whatever the splitter above is dragged to.
  QHeaderView* rows = table_->verticalHeader();
  rows->setVisible(false);
  rows->setMinimumSectionSize(table_->fontMetrics().height());
  rows->setDefaultSectionSize(table_->fontMetrics().lineSpacing() * 3 / 2);
  table_->setMinimumHeight(table_->horizontalHeader()->sizeHint().height() + kMinimumRows * rows->defaultSectionSize() +
                           2 * table_->frameWidth());
  table_->horizontalHeader()->setStretchLastSection(false);

  pin_button_ = new QPushButton(tr("Pin as baseline"), this);
  pin_button_->setObjectName("pin_baseline_button");
  pin_button_->setToolTip(tr("Make the selected run the baseline of its data set, model and batch"));
  rename_button_ = new QPushButton(tr("Rename"), this);
  delete_button_ = new QPushButton(tr("Delete"), this);
  delete_button_->setObjectName("delete_runs_button");
  csv_button_ = new QPushButton(tr("Export CSV…"), this);
  csv_button_->setToolTip(tr("Per-epoch data of the selected runs, one row per run and epoch"));
  trace_button_ = new QPushButton(tr("Export trace…"), this);
  trace_button_->setObjectName("export_trace_button");
  trace_button_->setToolTip(tr("The selected run's Chrome trace: every replica's sampled steps, phase by phase "
                               "(open it in chrome://tracing or ui.perfetto.dev)"));

  actions_ = new QWidget(this);
  actions_->setObjectName("history_actions");
  auto* hint = new QLabel(tr("Ctrl/Shift-click runs to overlay them"), actions_);
  hint->setStyleSheet("color: palette(mid);");
  hint->setToolTip(tr("Select two or more runs (Ctrl/Shift-click) to overlay them on the charts"));
  auto* buttons = new QHBoxLayout(actions_);
  buttons->setContentsMargins(0, 0, 0, 0);
  buttons->addWidget(hint, 1);
  buttons->addWidget(pin_button_);
  buttons->addWidget(rename_button_);
  buttons->addWidget(delete_button_);
  buttons->addWidget(csv_button_);
  buttons->addWidget(trace_button_);

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("history_tabs");
  tabs_->setDocumentMode(true);
  tabs_->addTab(table_, tr("Runs"));
  tabs_->setCornerWidget(actions_, Qt::TopRightCorner);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(tabs_);

  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    update_actions();
    emit selection_changed();
  });
  connect(model_, &HistoryModel::modelReset, this, [this] {
    fit_columns();
    update_actions();
  });
  connect(model_, &HistoryModel::rowsInserted, this, &HistoryView::fit_columns);
  connect(model_, &HistoryModel::runs_changed, this, &HistoryView::update_actions);
  connect(pin_button_, &QPushButton::clicked, this, &HistoryView::pin_selected);
  connect(rename_button_, &QPushButton::clicked, this, &HistoryView::rename_selected);
  connect(delete_button_, &QPushButton::clicked, this, &HistoryView::delete_selected);
  connect(csv_button_, &QPushButton::clicked, this, &HistoryView::export_csv_requested);
  connect(trace_button_, &QPushButton::clicked, this, &HistoryView::export_trace_requested);
  connect(table_, &QTableView::customContextMenuRequested, this, &HistoryView::show_context_menu);
  connect(tabs_, &QTabWidget::currentChanged, this, [this] { actions_->setVisible(tabs_->currentWidget() == table_); });
  fit_columns();
  update_actions();
}

std::vector<std::string> HistoryView::selected_ids() const {
  std::vector<std::pair<int, std::string>> rows;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows())
    rows.emplace_back(index.row(), index.data(HistoryModel::kIdRole).toString().toStdString());
  std::sort(rows.begin(), rows.end());
  std::vector<std::string> ids;
  for (auto& [row, id] : rows) ids.push_back(std::move(id));
  return ids;
}

void HistoryView::select_ids(const std::vector<std::string>& ids) {
  QItemSelection selection;
  for (const auto& id : ids) {
    const int row = model_->row_of(id);
    if (row < 0) continue;
    const QModelIndex left = proxy_->mapFromSource(model_->index(row, 0));
    const QModelIndex right = proxy_->mapFromSource(model_->index(row, HistoryModel::ColumnCount - 1));
    selection.select(left, right);
  }
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
  if (!selection.isEmpty()) table_->scrollTo(selection.indexes().first());
}

void HistoryView::add_page(QWidget* page, const QString& title) { tabs_->addTab(page, title); }

// The name takes the width the other columns leave (the row's tooltip has it whole), so the
// last columns, the comparison and the status, stay in view on a laptop screen; every other
// column is as wide as its contents, the devices up to kWidestDevicesChars (a longer text
// elides, its row's tooltip says it whole). The header forgets a column's mode when the
// model resets.
void HistoryView::fit_columns() {
  QHeaderView* columns = table_->horizontalHeader();
  columns->setSectionResizeMode(QHeaderView::Interactive);
  columns->setSectionResizeMode(HistoryModel::Name, QHeaderView::Stretch);
  // Column by column: sizing the stretched name to its contents too would keep it at that
  // width until the table is resized.
  for (int c = 0; c < HistoryModel::ColumnCount; ++c)
    if (c != HistoryModel::Name) table_->resizeColumnToContents(c);
  const int widest = table_->fontMetrics().averageCharWidth() * kWidestDevicesChars;
  if (table_->columnWidth(HistoryModel::Devices) > widest) table_->setColumnWidth(HistoryModel::Devices, widest);
}

void HistoryView::update_actions() {
  const auto ids = selected_ids();
  pin_button_->setEnabled(ids.size() == 1);
  rename_button_->setEnabled(ids.size() == 1);
  delete_button_->setEnabled(!ids.empty());
  csv_button_->setEnabled(!ids.empty());
  trace_button_->setEnabled(ids.size() == 1 && model_->has_trace(ids.front()));
  if (ids.size() == 1) {
    const RunRecord* r = model_->find(ids.front());
    pin_button_->setEnabled(r && !model_->is_baseline(*r));
  }
}

void HistoryView::pin_selected() {
  const auto ids = selected_ids();
  if (ids.size() != 1) return;
  QString error;
  if (!model_->pin_baseline(ids.front(), &error) && !error.isEmpty())
    QMessageBox::warning(this, tr("Pin baseline"), tr("Could not save the baseline pin:\n%1").arg(error));
  update_actions();
}

void HistoryView::rename_selected() {
  const auto ids = selected_ids();
  if (ids.size() != 1) return;
  const int row = model_->row_of(ids.front());
  table_->edit(proxy_->mapFromSource(model_->index(row, HistoryModel::Name)));
}

void HistoryView::delete_selected() {
  const auto ids = selected_ids();
  if (ids.empty()) return;
  QString what = ids.size() == 1 ? tr("run “%1”").arg(run_label(*model_->find(ids.front())))
                                 : tr("%1 runs").arg(ids.size());
  if (QMessageBox::question(this, tr("Delete runs"),
                            tr("Delete %1? Their run-record files are removed from disk.").arg(what)) !=
      QMessageBox::Yes)
    return;
  model_->remove(ids);
}

void HistoryView::show_context_menu(const QPoint& pos) {
  if (selected_ids().empty()) return;
  QMenu menu(this);
  menu.addAction(tr("Pin as baseline"), this, &HistoryView::pin_selected)->setEnabled(pin_button_->isEnabled());
  menu.addAction(tr("Rename"), this, &HistoryView::rename_selected)->setEnabled(rename_button_->isEnabled());
  menu.addAction(tr("Export CSV…"), this, &HistoryView::export_csv_requested);
  menu.addAction(tr("Export trace…"), this, &HistoryView::export_trace_requested)->setEnabled(trace_button_->isEnabled());
  menu.addSeparator();
  menu.addAction(tr("Delete…"), this, &HistoryView::delete_selected);
  menu.exec(table_->viewport()->mapToGlobal(pos));
}

}  // namespace mb

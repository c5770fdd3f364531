// Chart panel widget: three chart views in a grid with the comparison card as the fourth cell.
#include "charts/chart_panel.h"

#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "charts/chart_render.h"
#include "charts/comparison_card.h"

namespace mb {

ChartPanel::ChartPanel(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout;
  grid->setSpacing(6);
  for (ChartKind kind : kAllCharts) {
    auto* chart = new QChart;
    init_chart(chart);
    auto* view = new QChartView(chart, this);
    view->setObjectName(QStringLiteral("chart_") + chart_name(kind));
    view->setRenderHint(QPainter::Antialiasing);
    // Qt Charts repaints a line series within its line's bounds, not its markers': a marker
    // that moved with the axis left stray fragments of itself behind (seen under Xvfb after
    // a reference experiment). The whole chart is repainted instead, at most 10 times a second.
    view->setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
    view->setMinimumSize(320, 240);
    views_[int(kind)] = view;
  }
  summary_ = new QLabel(this);
  summary_->setObjectName("comparison_summary");
  summary_->setTextFormat(Qt::RichText);
  summary_->setWordWrap(true);
  summary_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  summary_->setMargin(6);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* card = new QScrollArea(this);
  card->setWidget(summary_);
  card->setWidgetResizable(true);
  card->setFrameShape(QFrame::StyledPanel);
  card->setStyleSheet("QScrollArea { background: white; } QLabel { background: white; }");

  grid->addWidget(views_[int(ChartKind::EpochTime)], 0, 0);
  grid->addWidget(views_[int(ChartKind::Accuracy)], 0, 1);
  grid->addWidget(views_[int(ChartKind::Loss)], 1, 0);
  grid->addWidget(card, 1, 1);

  show_baseline_ = new QCheckBox(tr("Show baseline"), this);
  show_baseline_->setObjectName("show_baseline");
  show_baseline_->setToolTip(tr("Draw the single-device baseline (dashed grey) on every chart"));
  show_train_ = new QCheckBox(tr("Train curves"), this);
  show_train_->setObjectName("show_train");
  show_train_->setToolTip(tr("Draw training accuracy and loss (lighter lines) beside validation"));
  zoom_accuracy_ = new QCheckBox(tr("Zoom accuracy axis"), this);
  zoom_accuracy_->setObjectName("zoom_accuracy");
  zoom_accuracy_->setToolTip(tr("Fit the accuracy axis to the data instead of 0–100 %"));
  auto* options = new QHBoxLayout;
  options->addWidget(new QLabel(tr("Charts:"), this));
  options->addWidget(show_baseline_);
  options->addWidget(show_train_);
  options->addWidget(zoom_accuracy_);
  options->addStretch(1);
  auto* hint = new QLabel(tr("Hover a line for exact values."), this);
  hint->setStyleSheet("color: palette(mid);");
  hint->setToolTip(tr("Solid lines are runs, dashed grey their baselines, lighter lines the training curves, dotted "
                      "lines the running values of the epoch in progress"));
  options->addWidget(hint);
  auto* export_button = new QPushButton(tr("Export PNG…"), this);
  export_button->setObjectName("export_png_button");
  export_button->setToolTip(tr("Save one chart or all of them (with the comparison) as a PNG of a chosen size"));
  options->addWidget(export_button);
  connect(export_button, &QPushButton::clicked, this, &ChartPanel::export_requested);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(options);
  layout->addLayout(grid, 1);

  set_options(options_);
  auto on_toggle = [this] {
    options_.show_baseline = show_baseline_->isChecked();
    options_.show_train = show_train_->isChecked();
    options_.zoom_accuracy = zoom_accuracy_->isChecked();
    dirty_ = true;
    refresh_now();
    emit options_changed();
  };
  for (QCheckBox* box : {show_baseline_, show_train_, zoom_accuracy_}) connect(box, &QCheckBox::toggled, this, on_toggle);

  timer_.setInterval(kRefreshMs);
  connect(&timer_, &QTimer::timeout, this, &ChartPanel::refresh_if_dirty);
  timer_.start();
  refresh_now();
}

void ChartPanel::set_runs(std::vector<ShownRun> runs) {
  runs_ = std::move(runs);
  dirty_ = true;
}

void ChartPanel::set_live_traces(const RunningTrace& loss, const RunningTrace& acc) {
  for (auto& r : runs_) {
    if (!r.live) continue;
    r.loss_trace = loss;   // implicitly shared lists: no point is copied here
    r.acc_trace = acc;
    dirty_ = true;
  }
}

void ChartPanel::set_options(const ChartOptions& options) {
  options_ = options;
  const QSignalBlocker b1(show_baseline_), b2(show_train_), b3(zoom_accuracy_);
  show_baseline_->setChecked(options.show_baseline);
  show_train_->setChecked(options.show_train);
  zoom_accuracy_->setChecked(options.zoom_accuracy);
  dirty_ = true;
}

// Hidden behind another tab, the charts wait: drawing them would only take CPU from the replicas.
void ChartPanel::refresh_if_dirty() {
  if (dirty_ && isVisible()) refresh_now();
}

void ChartPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (dirty_) refresh_now();
}

void ChartPanel::refresh_now() {
  dirty_ = false;
  for (ChartKind kind : kAllCharts) apply_content(chart(kind), build_chart(kind, runs_, options_));
  const QString html = summary_html();
  if (summary_->text() != html) summary_->setText(html);
}

QChart* ChartPanel::chart(ChartKind kind) const { return views_[int(kind)]->chart(); }

// The card compares with the baseline even when the charts hide it.
QString ChartPanel::summary_html() const { return comparison_summary_html(runs_); }

}  // namespace mb

// The Sweep tab (see sweep_panel.h).
#include "sweep/sweep_panel.h"

#include <QChart>
#include <QChartView>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include <set>

#include "config/train_config.h"
#include "sweep/sweep_export.h"
#include "sweep/sweep_table_model.h"

namespace mb {

std::vector<int64_t> parse_batches(const QString& text, QString* problem) {
  static const QRegularExpression separators(QStringLiteral("[,;\\s]+"));
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  QString why;
  for (const QString& word : text.split(separators, Qt::SkipEmptyParts)) {
    bool ok = false;
    const qlonglong b = word.toLongLong(&ok);
    if (!ok) {
      why = QObject::tr("“%1” is not a batch size: give whole numbers, e.g. 64, 128, 256").arg(word);
      break;
    }
    if (b < 1 || b > kMaxGlobalBatch) {
      why = QObject::tr("Batch %1 is outside 1 to %L2").arg(b).arg(kMaxGlobalBatch);
      break;
    }
    if (!seen.insert(b).second) {
      why = QObject::tr("Batch %1 is listed twice").arg(b);
      break;
    }
    out.push_back(b);
  }
  if (why.isEmpty() && out.empty()) why = QObject::tr("Give at least one batch size, e.g. 64, 128, 256, 512, 1024");
  if (problem) *problem = why;
  if (!why.isEmpty()) out.clear();
  return out;
}

QString batches_text(const std::vector<int64_t>& batches) {
  QStringList words;
  for (int64_t b : batches) words << QString::number(b);
  return words.join(QStringLiteral(", "));
}

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("sweep_panel");
  model_ = new SweepTableModel(this);
  const SweepOptions defaults;

  batches_ = new QLineEdit(batches_text(defaults.batches), this);
  batches_->setObjectName("sweep_batches");
  batches_->setToolTip(tr("The global batch sizes to train with, each once with the learning rate as set and once "
                          "scaled linearly with the batch (lr × batch / %1)")
                           .arg(defaults.reference_batch));
  target_ = new QDoubleSpinBox(this);
  target_->setObjectName("sweep_target");
  target_->setRange(10, 100);
  target_->setDecimals(1);
  target_->setSingleStep(0.5);
  target_->setSuffix(tr(" %"));
  target_->setValue(100 * defaults.target_val_acc);
  target_->setToolTip(tr("The validation accuracy to reach: the sweep measures how much training time each "
                         "configuration needs to get there"));
  auto* from_setup = new QLabel(tr("Devices, epochs, learning rate and data: from the run setup. Press <b>Sweep</b> "
                                   "there to start."),
                                this);
  from_setup->setStyleSheet("color: #555555;");
  from_setup->setWordWrap(true);
  problem_ = new QLabel(this);
  problem_->setObjectName("sweep_problem");
  problem_->setStyleSheet("color: #c62828;");
  problem_->setVisible(false);

  auto* settings = new QHBoxLayout;
  settings->addWidget(new QLabel(tr("Batch sizes:"), this));
  settings->addWidget(batches_, 2);
  settings->addSpacing(12);
  settings->addWidget(new QLabel(tr("Target accuracy:"), this));
  settings->addWidget(target_);
  settings->addSpacing(12);
  settings->addWidget(from_setup, 3);
  struct Export {
    const char* name;
    QString text, tip;
    void (SweepPanel::*signal)();
  };
  const Export exports[] = {
      {"sweep_export_png", tr("PNG…"), tr("Save the verdict, the table and the charts as one PNG for slides"),
       &SweepPanel::export_png_requested},
      {"sweep_export_csv", tr("CSV…"), tr("Save the table as CSV (the same columns as mirrorbench-cli sweep --csv)"),
       &SweepPanel::export_csv_requested},
      {"sweep_export_json", tr("JSON…"), tr("Save the sweep as JSON (as mirrorbench-cli sweep --json)"),
       &SweepPanel::export_json_requested},
  };
  settings->addWidget(new QLabel(tr("Export:"), this));
  for (const Export& e : exports) {
    auto* b = new QPushButton(e.text, this);
    b->setObjectName(e.name);
    b->setToolTip(e.tip);
    connect(b, &QPushButton::clicked, this, e.signal);
    settings->addWidget(b);
    exports_.push_back(b);
  }

  headline_ = new QLabel(this);
  headline_->setObjectName("sweep_verdict");
  headline_->setWordWrap(true);
  headline_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont big = headline_->font();
  big.setPointSizeF(big.pointSizeF() * 1.35);
  big.setBold(true);
  headline_->setFont(big);
  status_ = new QLabel(this);
  status_->setObjectName("sweep_status");
  status_->setStyleSheet("color: #555555;");

  table_ = new QTableView(this);
  table_->setObjectName("sweep_table");
  table_->setModel(model_);
  table_->setSelectionMode(QAbstractItemView::NoSelection);
  table_->setAlternatingRowColors(false);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);

  auto* charts = new QWidget(this);
  auto* chart_row = new QHBoxLayout(charts);
  chart_row->setContentsMargins(0, 0, 0, 0);
  chart_row->setSpacing(4);
  for (SweepChart kind : kSweepCharts) {
    auto* view = new QChartView(new QChart, charts);
    view->setObjectName(QStringLiteral("chart_") + sweep_chart_name(kind));
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(220, 180);
    views_[int(kind)] = view;
    chart_row->addWidget(view, 1);
  }

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(charts);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(settings);
  layout->addWidget(problem_);
  layout->addWidget(headline_);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  auto changed = [this] {
    const QString why = batches_problem();
    problem_->setText(why);
    problem_->setVisible(!why.isEmpty());
    emit settings_changed();
  };
  connect(batches_, &QLineEdit::textChanged, this, changed);
  connect(target_, &QDoubleSpinBox::valueChanged, this, changed);
  refresh();
}

std::vector<int64_t> SweepPanel::batches() const { return parse_batches(batches_->text(), nullptr); }

QString SweepPanel::batches_problem() const {
  QString why;
  parse_batches(batches_->text(), &why);
  return why;
}

double SweepPanel::target() const { return target_->value() / 100.0; }

void SweepPanel::set_settings(const std::vector<int64_t>& batches, double target) {
  if (!batches.empty()) batches_->setText(batches_text(batches));
  if (target > 0) target_->setValue(100 * target);
}

SweepOptions SweepPanel::options(const TrainConfig& base) const {
  SweepOptions o;
  o.base = base;
  o.batches = batches();
  o.target_val_acc = target();
  return o;
}

void SweepPanel::start(const SweepOptions& options) {
  progress_.start(options);
  refresh();
}

void SweepPanel::run_started(int index, const RunConfig& config) {
  progress_.run_started(index, config);
  refresh();
}

void SweepPanel::epoch(const EpochMetrics& m) {
  progress_.epoch(m);
  refresh();
}

void SweepPanel::run_finished(int index, const RunRecord& record) {
  progress_.run_finished(index, record);
  refresh();
}

void SweepPanel::finished(bool stopped) {
  progress_.finish(stopped);
  refresh();
}

void SweepPanel::set_busy(bool busy) {
  batches_->setEnabled(!busy);
  target_->setEnabled(!busy);
  for (QWidget* w : exports_) w->setEnabled(!progress_.empty());
}

QChart* SweepPanel::chart(SweepChart kind) const { return views_[int(kind)]->chart(); }

QString SweepPanel::headline() const { return headline_->text(); }

QImage SweepPanel::render(QSize size) const { return render_sweep_image(progress_, size); }

void SweepPanel::refresh() {
  model_->set_progress(progress_);
  if (progress_.empty()) {
    headline_->setText(tr("The bonus experiment in one action: press Sweep in the run setup"));
    status_->setText(tr("Every batch size trains twice, with the learning rate as set and scaled with the batch; "
                        "the table and charts fill in as each one finishes, and the best configuration is named "
                        "here: the fastest to reach the target accuracy."));
    status_->setWordWrap(true);
  } else {
    const SweepSummary s = progress_.summary();
    headline_->setText(sweep_headline(progress_));
    headline_->setStyleSheet(s.best >= 0 && !progress_.running() ? "color: #1b5e20;" : "color: #222222;");
    status_->setText(progress_.status_text());
  }
  for (SweepChart kind : kSweepCharts) fill_sweep_chart(chart(kind), sweep_bars(kind, progress_));
  for (QWidget* w : exports_) w->setEnabled(!progress_.empty());
}

}  // namespace mb

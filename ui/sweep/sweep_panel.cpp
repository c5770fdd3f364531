// The Sweep tab (see sweep_panel.h).
#include "sweep/sweep_panel.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
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

#include <algorithm>
#include <set>

#include "config/train_config.h"
#include "util/error.h"
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

std::vector<ModelSpec> models_or_empty(const QString& text) {
  try {
    return parse_sweep_models(text.toStdString());
  } catch (const ConfigError&) {
    return {};
  }
}

std::vector<SimulatedLink> links_or_empty(const QString& text) {
  try {
    return parse_sweep_links(text.toStdString());
  } catch (const ConfigError&) {
    return {};
  }
}

std::vector<Scenario> remedies_or_empty(const QString& text) {
  try {
    return parse_sweep_remedies(text.toStdString());
  } catch (const ConfigError&) {
    return {};
  }
}

SweepPanel::SweepPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("sweep_panel");
  model_ = new SweepTableModel(this);
  const SweepOptions defaults;

  make_value_editors(defaults);
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

  // Two rows, so the tab is no wider than a 1366-pixel screen allows: what to vary, then where
  // the rest comes from and the exports.
  auto* settings = new QHBoxLayout;
  settings->addWidget(new QLabel(tr("Vary:"), this));
  settings->addWidget(axis_);
  settings->addSpacing(8);
  settings->addWidget(values_label_);
  for (QLineEdit* edit : {batches_, models_, links_, remedies_}) settings->addWidget(edit, 2);
  settings->addSpacing(12);
  settings->addWidget(new QLabel(tr("Target accuracy:"), this));
  settings->addWidget(target_);
  auto* second = new QHBoxLayout;
  second->addWidget(from_setup, 3);
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
  second->addWidget(new QLabel(tr("Export:"), this));
  for (const Export& e : exports) {
    auto* b = new QPushButton(e.text, this);
    b->setObjectName(e.name);
    b->setToolTip(e.tip);
    connect(b, &QPushButton::clicked, this, e.signal);
    second->addWidget(b);
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

  QSplitter* split = make_table_and_charts();

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(settings);
  layout->addLayout(second);
  layout->addWidget(problem_);
  layout->addWidget(headline_);
  layout->addWidget(status_);
  layout->addWidget(split, 1);

  auto changed = [this] {
    const QString why = settings_problem();
    problem_->setText(why);
    problem_->setVisible(!why.isEmpty());
    emit settings_changed();
  };
  for (QLineEdit* edit : {batches_, models_, links_, remedies_}) connect(edit, &QLineEdit::textChanged, this, changed);
  connect(target_, &QDoubleSpinBox::valueChanged, this, changed);
  connect(axis_, &QComboBox::currentIndexChanged, this, [this, changed] {
    show_axis();
    progress_.set_empty_axis(axis());
    if (progress_.empty()) refresh();   // the empty charts and columns of the new axis
    changed();
  });
  show_axis();
  refresh();
}

// The table above the three charts.
QSplitter* SweepPanel::make_table_and_charts() {
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
  for (int i = 0; i < kSweepChartViews; ++i) {
    auto* view = new QChartView(new QChart, charts);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumSize(220, 180);
    views_[i] = view;
    chart_row->addWidget(view, 1);
  }

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(charts);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  return split;
}

// The axis picker and one list per axis (only the axis' own is shown).
void SweepPanel::make_value_editors(const SweepOptions& defaults) {
  axis_ = new QComboBox(this);
  axis_->setObjectName("sweep_axis");
  axis_->addItem(tr("Batch size"), int(SweepAxis::Batch));
  axis_->addItem(tr("Model (what-if)"), int(SweepAxis::Model));
  axis_->addItem(tr("Link (simulated)"), int(SweepAxis::Link));
  axis_->addItem(tr("Remedy (communication)"), int(SweepAxis::Remedy));
  axis_->setToolTip(tr("What the sweep varies. Batch size: the bonus experiment (learning-rate scaling). Model or "
                       "link: each value on 1 to N replicas of the run setup's devices, and the speed-up over one "
                       "replica: why more devices can make training slower. Remedy: what to do about it - one "
                       "replica, then N replicas bare and with each remedy over the run setup's link, with the "
                       "validation accuracy each one costs"));
  values_label_ = new QLabel(this);
  batches_ = new QLineEdit(batches_text(defaults.batches), this);
  batches_->setObjectName("sweep_batches");
  batches_->setToolTip(tr("The global batch sizes to train with, each once with the learning rate as set and once "
                          "scaled linearly with the batch (lr × batch / %1)")
                           .arg(defaults.reference_batch));
  models_ = new QLineEdit(QString::fromStdString(sweep_models_text(defaults.models)), this);
  models_->setObjectName("sweep_models");
  models_->setToolTip(tr("The models to train, each on 1 to N replicas, separated by commas: presets (reference, mlp, "
                         "lenet5, cnn-cifar, dense:N for a what-if dense width N), layer texts as in the Model group, "
                         "or Keras model files (.json, .keras)"));
  links_ = new QLineEdit(QString::fromStdString(sweep_links_text(defaults.links)), this);
  links_->setObjectName("sweep_links");
  links_->setToolTip(tr("The links between CPU replicas, each as GBIT[:US] (bandwidth in Gbit/s, latency per hop in "
                        "µs) or off (this machine's own exchange): each on 2 to N replicas of the run setup's model, "
                        "against one replica. 100:3 is 100 GbE (RDMA), 10:25 10 GbE, 1:50 1 GbE"));
  remedies_ = new QLineEdit(QString::fromStdString(sweep_remedies_text(defaults.remedies)), this);
  remedies_->setObjectName("sweep_remedies");
  remedies_->setToolTip(tr("The remedies for communication, each on all of the run setup's devices over its link "
                           "(set a simulated link there to see them matter): accumulate:K (one all-reduce every K "
                           "micro-batches), bf16 or fp16 (a compressed all-reduce), powersgd:RANK (weight matrices as "
                           "rank-RANK factors), bucket:MB (the all-reduce overlapped with the backward pass in "
                           "buckets); join several with '+', e.g. "
                           "accumulate:8+bf16. Or the input pipeline's, over the run's simulated input cost: "
                           "loaders:N (loader threads per replica), prefetch:STEPS (how far ahead they prepare). "
                           "The bare run and one replica are always swept"));
}

SweepAxis SweepPanel::axis() const { return SweepAxis(axis_->currentData().toInt()); }

QLineEdit* SweepPanel::values_edit(SweepAxis axis) const {
  switch (axis) {
    case SweepAxis::Batch: return batches_;
    case SweepAxis::Model: return models_;
    case SweepAxis::Link: return links_;
    case SweepAxis::Remedy: return remedies_;
  }
  return batches_;
}

void SweepPanel::show_axis() {
  for (SweepAxis a : {SweepAxis::Batch, SweepAxis::Model, SweepAxis::Link, SweepAxis::Remedy})
    values_edit(a)->setVisible(a == axis());
  values_label_->setText(axis() == SweepAxis::Batch    ? tr("Batch sizes:")
                         : axis() == SweepAxis::Model  ? tr("Models:")
                         : axis() == SweepAxis::Remedy ? tr("Remedies:")
                                                       : tr("Links (Gbit/s[:µs]):"));
}

std::vector<int64_t> SweepPanel::batches() const { return parse_batches(batches_->text(), nullptr); }

QString SweepPanel::settings_problem() const {
  QString why;
  try {
    switch (axis()) {
      case SweepAxis::Batch: parse_batches(batches_->text(), &why); break;
      case SweepAxis::Model: parse_sweep_models(models_->text().toStdString(), "Models"); break;
      case SweepAxis::Link: parse_sweep_links(links_->text().toStdString(), "Links"); break;
      case SweepAxis::Remedy: parse_sweep_remedies(remedies_->text().toStdString(), "Remedies"); break;
    }
  } catch (const ConfigError& e) {
    why = QString::fromStdString(e.what());
  }
  return why;
}

double SweepPanel::target() const { return target_->value() / 100.0; }

SweepSettings SweepPanel::settings() const {
  SweepSettings s;
  s.axis = axis();
  s.target = target();
  s.batches = batches();
  // The other axes' lists when they read (the axis' own is checked by settings_problem).
  s.models = models_or_empty(models_->text());
  s.links = links_or_empty(links_->text());
  s.remedies = remedies_or_empty(remedies_->text());
  return s;
}

void SweepPanel::set_settings(const SweepSettings& s) {
  if (s.axis) axis_->setCurrentIndex(axis_->findData(int(*s.axis)));
  if (!s.batches.empty()) batches_->setText(batches_text(s.batches));
  if (!s.models.empty()) models_->setText(QString::fromStdString(sweep_models_text(s.models)));
  if (!s.links.empty()) links_->setText(QString::fromStdString(sweep_links_text(s.links)));
  if (!s.remedies.empty()) remedies_->setText(QString::fromStdString(sweep_remedies_text(s.remedies)));
  if (s.target > 0) target_->setValue(100 * s.target);
}

SweepOptions SweepPanel::options(const TrainConfig& base) const {
  const SweepSettings s = settings();
  SweepOptions o;
  o.base = base;
  o.axis = *s.axis;
  o.batches = s.batches;
  if (!s.models.empty()) o.models = s.models;
  if (!s.links.empty()) o.links = s.links;
  if (!s.remedies.empty()) o.remedies = s.remedies;
  o.target_val_acc = s.target;
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
  axis_->setEnabled(!busy);
  for (QLineEdit* edit : {batches_, models_, links_, remedies_}) edit->setEnabled(!busy);
  target_->setEnabled(!busy);
  for (QWidget* w : exports_) w->setEnabled(!progress_.empty());
}

void SweepPanel::refill_charts() {
  const auto kinds = sweep_charts(progress_.options().axis);
  for (int i = 0; i < kSweepChartViews; ++i) {
    views_[i]->setObjectName(QStringLiteral("chart_") + sweep_chart_name(kinds[std::size_t(i)]));
    fill_sweep_chart(views_[i]->chart(), sweep_bars(kinds[std::size_t(i)], progress_));
  }
}

QChart* SweepPanel::chart(SweepChart kind) const {
  const auto kinds = sweep_charts(progress_.options().axis);
  for (int i = 0; i < kSweepChartViews; ++i)
    if (kinds[std::size_t(i)] == kind) return views_[i]->chart();
  return nullptr;
}

QString SweepPanel::headline() const { return headline_->text(); }

QImage SweepPanel::render(QSize size) const { return render_sweep_image(progress_, size); }

void SweepPanel::refresh() {
  model_->set_progress(progress_);
  if (progress_.empty()) {
    headline_->setText(tr("The bonus experiment in one action: press Sweep in the run setup"));
    status_->setText(tr("Batch size: every size trains twice, with the learning rate as set and scaled with the "
                        "batch, and the best is the fastest to reach the target accuracy. Model or link: each value "
                        "trains on 1 to N replicas, and the verdict gives each one's speed-up over one replica. "
                        "Remedy: N replicas bare and with each remedy, their speed-up and the accuracy each costs. "
                        "The table and charts fill in as each configuration finishes."));
    status_->setWordWrap(true);
  } else {
    const SweepSummary s = progress_.summary();
    headline_->setText(sweep_headline(progress_));
    // Green only for good news (a batch reached the target, more replicas were faster), red for
    // a finished sweep where none did; a running sweep's "so far" stays neutral.
    const char* colour = progress_.running() ? "#222222" : s.reached ? "#1b5e20" : "#b71c1c";
    headline_->setStyleSheet(QStringLiteral("color: %1;").arg(colour));
    status_->setText(progress_.status_text());
  }
  refill_charts();
  const std::vector<int> shown = SweepTableModel::columns_for(progress_.options().axis);
  for (int c = 0; c < SweepTableModel::kColumns; ++c)
    table_->setColumnHidden(c, std::find(shown.begin(), shown.end(), c) == shown.end());
  for (QWidget* w : exports_) w->setEnabled(!progress_.empty());
}

}  // namespace mb

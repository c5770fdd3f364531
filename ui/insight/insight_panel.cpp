// The "Where the time goes" page (see insight_panel.h).
#include "insight/insight_panel.h"

#include <QChart>
#include <QChartView>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QVBoxLayout>

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "charts/chart_render.h"
#include "common/export_file.h"
#include "common/format.h"
#include "history/history_model.h"
#include "insight/bar_chart_view.h"
#include "insight/calibration_runner.h"
#include "model/model_spec.h"
#include "model/model_text.h"
#include "util/system_info.h"

namespace mb {

InsightPanel::InsightPanel(const HistoryModel* history, QWidget* parent) : QWidget(parent), history_(history) {
  runner_ = new CalibrationRunner(this);

  calibrate_ = new QPushButton(tr("Calibrate"), this);
  calibrate_->setObjectName("calibrate_button");
  calibration_status_ = new QLabel(this);
  calibration_status_->setObjectName("calibration_status");
  calibration_status_->setStyleSheet("color: palette(mid);");
  calibration_status_->setMinimumWidth(60);
  calibration_status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  link_ = new QDoubleSpinBox(this);
  link_->setObjectName("link_gbps");
  link_->setRange(0, 400);
  link_->setDecimals(0);
  link_->setSuffix(tr(" Gbit/s"));
  link_->setSpecialValueText(tr("this machine only"));
  link_->setToolTip(tr("Predict replicas beyond this machine's cores on more machines joined by a link of this speed "
                       "(a ring all-reduce between them); this machine only: they would share its cores"));
  // A push button with a menu: its width holds the menu's arrow beside the text (a tool
  // button's instant popup drew the arrow over "Export", which read as cut at the edge).
  export_ = new QPushButton(tr("Export"), this);
  export_->setObjectName("insight_export_button");
  export_->setToolTip(tr("Save the charts as PNG, the breakdown as CSV or the predictions as CSV or JSON"));
  auto* menu = new QMenu(export_);
  menu->addAction(tr("Charts as PNG…"), this, &InsightPanel::export_png_requested);
  menu->addAction(tr("Breakdown as CSV…"), this, [this] { export_dialog(false, false); });
  menu->addAction(tr("Predictions as CSV…"), this, [this] { export_dialog(true, false); });
  menu->addAction(tr("Predictions as JSON…"), this, [this] { export_dialog(true, true); });
  export_->setMenu(menu);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Predictor:"), this));
  bar->addWidget(calibrate_);
  bar->addWidget(calibration_status_, 1);
  bar->addWidget(new QLabel(tr("Beyond this machine:"), this));
  bar->addWidget(link_);
  bar->addWidget(export_);

  auto chart_view = [this](const QString& name) {
    auto* chart = new QChart;
    init_chart(chart);
    auto* view = new QChartView(chart, this);
    view->setObjectName(name);
    view->setRenderHint(QPainter::Antialiasing);
    view->setViewportUpdateMode(QGraphicsView::FullViewportUpdate);   // as the training charts (chart_panel.cpp)
    view->setMinimumSize(300, 200);
    return view;
  };
  epoch_time_view_ = chart_view(QStringLiteral("insight_epoch_time"));
  prediction_view_ = chart_view(QStringLiteral("insight_prediction"));
  breakdown_view_ = new BarChartView(this);
  breakdown_view_->setObjectName("insight_breakdown");
  timeline_view_ = new BarChartView(this);
  timeline_view_->setObjectName("insight_timeline");
  for (BarChartView* v : {breakdown_view_, timeline_view_}) v->setMinimumSize(300, 200);

  auto* grid = new QGridLayout;
  grid->setSpacing(6);
  grid->addWidget(epoch_time_view_, 0, 0);
  grid->addWidget(breakdown_view_, 0, 1);
  grid->addWidget(timeline_view_, 1, 0);
  grid->addWidget(prediction_view_, 1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(bar);
  layout->addLayout(grid, 1);

  connect(calibrate_, &QPushButton::clicked, this, [this] {
    if (calibrating()) return cancel_calibration();
    CalibrateOptions o;
    o.model = model_from_text(shown_model());   // the predictor times the model it predicts
    start_calibration(o);
  });
  connect(link_, &QDoubleSpinBox::valueChanged, this, [this] {
    dirty_ = true;
    emit calibration_changed();
  });
  connect(runner_, &CalibrationRunner::progress, this, [this](const QString& line) {
    calibration_status_->setText(tr("Measuring… %1").arg(line.simplified()));
  });
  connect(runner_, &CalibrationRunner::finished, this, [this](const MachineCalibration& m) {
    calibrations_[calibrated_model(m)] = m;
    if (!calibration_file_.empty()) {
      try {
        save_machine_calibration(calibration_file(calibrated_model(m)), m);
      } catch (const std::exception& e) {
        spdlog::warn("The calibration was not saved: {}", e.what());
      }
    }
    spdlog::info("Calibrated this machine for the scaling predictor: {} core(s), {}", m.calibration.cores,
                 m.calibration.device);
    update_controls();
    dirty_ = true;
    emit calibration_running(false);
    emit calibration_changed();
    emit calibration_done(true);
  });
  connect(runner_, &CalibrationRunner::failed, this, [this](const QString& message, bool cancelled) {
    if (!cancelled) spdlog::error("Calibration failed: {}", message.toStdString());
    update_controls();
    calibration_status_->setText(message);
    emit calibration_running(false);
    emit calibration_done(false);
  });

  timer_.setInterval(kRefreshMs);
  connect(&timer_, &QTimer::timeout, this, &InsightPanel::refresh_if_dirty);
  timer_.start();
  update_controls();
}

InsightPanel::~InsightPanel() = default;

void InsightPanel::set_runs(const std::vector<ShownRun>& runs, const ChartOptions& options) {
  runs_ = runs;
  options_ = options;
  dirty_ = true;
  update_controls();   // the model on display names its calibration
}

void InsightPanel::run_started(const RunConfig& config) {
  live_timeline_.reset();
  live_epoch_.reset();
  live_config_ = config;
  dirty_ = true;
}

void InsightPanel::show_step(const StepProgress& p) {
  live_epoch_ = live_epoch(p);
  if (!p.recent.empty()) live_timeline_ = timeline_from_progress(p, live_config_);
  dirty_ = true;
}

void InsightPanel::run_finished(const RunRecord& record) {
  if (live_timeline_ && live_timeline_->live) {
    live_timeline_->run_id = record.id;
    live_timeline_->live = false;
    live_timeline_->config = record.config;
  }
  live_epoch_.reset();
  dirty_ = true;
}

void InsightPanel::set_calibration_file(std::filesystem::path file) {
  calibration_file_ = std::move(file);
  calibrations_.clear();
  std::vector<std::filesystem::path> files{calibration_file_};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(calibration_file_.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("calibration-") && name.ends_with(".json") && entry.path() != calibration_file_)
      files.push_back(entry.path());
  }
  for (const auto& f : files) {
    std::string warning;
    std::optional<MachineCalibration> m = load_machine_calibration(f, &warning);
    if (!warning.empty()) spdlog::warn("{}", warning);
    if (m && !m->cpu_model.empty() && m->cpu_model != cpu_model_name()) {
      spdlog::info("The saved calibration {} was measured on another CPU ({}): calibrate this machine again",
                   f.filename().string(), m->cpu_model);
      m.reset();
    }
    if (m) calibrations_[calibrated_model(*m)] = std::move(*m);
  }
  update_controls();
  dirty_ = true;
  emit calibration_changed();
}

void InsightPanel::set_calibration(std::optional<MachineCalibration> calibration) {
  if (calibration) calibrations_[calibrated_model(*calibration)] = std::move(*calibration);
  else calibrations_.clear();
  update_controls();
  dirty_ = true;
  emit calibration_changed();
}

const MachineCalibration* InsightPanel::calibration_for(const std::string& model) const {
  const auto it = calibrations_.find(model);
  return it == calibrations_.end() ? nullptr : &it->second;
}

const MachineCalibration* InsightPanel::calibration_to_predict(const std::string& model) const {
  const MachineCalibration* m = calibration_for(model);
  return m ? m : calibration_for(model_text(ModelSpec{}));
}

std::string InsightPanel::shown_model() const {
  const ShownRun* primary = primary_run(runs_);
  return model_text(primary ? primary->record.config.model : ModelSpec{});
}

// The reference CNN's calibration keeps the file name it always had, the dense what-ifs theirs
// (calibration-cnn-dense4096.json); other models are named by their text, its characters outside
// [A-Za-z0-9-] as '_', with a hash of the whole text when it is long.
std::filesystem::path InsightPanel::calibration_file(const std::string& model) const {
  const ModelSpec spec = model_from_text(model);
  if (spec.is_reference()) return calibration_file_;
  if (const auto width = reference_family_width(spec))
    return calibration_file_.parent_path() / fmt::format("calibration-cnn-dense{}.json", *width);
  std::string name;
  for (char ch : model) name += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' ? ch : '_';
  if (name.size() > 96) name = fmt::format("{}-{:016x}", name.substr(0, 80), std::hash<std::string>{}(model));
  return calibration_file_.parent_path() / ("calibration-" + name + ".json");
}

double InsightPanel::link_gbps() const { return link_->value(); }
bool InsightPanel::calibrating() const { return runner_->running(); }

bool InsightPanel::start_calibration(const CalibrateOptions& options) {
  if (machine_busy_ || runner_->running()) return false;
  if (!runner_->start(options)) return false;
  spdlog::info("Calibrating this machine for the scaling predictor (under a minute; runs wait meanwhile)");
  calibration_status_->setText(tr("Measuring…"));
  update_controls();
  emit calibration_running(true);
  return true;
}

void InsightPanel::cancel_calibration() {
  if (!runner_->running()) return;
  runner_->cancel();
  calibration_status_->setText(tr("Cancelling after the point being measured…"));
}

void InsightPanel::set_machine_busy(bool busy) {
  machine_busy_ = busy;
  update_controls();
}

void InsightPanel::update_controls() {
  const bool running = runner_->running();
  calibrate_->setText(running ? tr("Cancel calibration") : calibration() ? tr("Calibrate again") : tr("Calibrate"));
  calibrate_->setEnabled(running || !machine_busy_);
  calibrate_->setToolTip(machine_busy_ && !running
                             ? tr("A run is training: calibrate once it has finished (it needs every core)")
                             : tr("Measure this machine for the scaling predictor: every core computes in lock-step at "
                                  "several batch sizes and the all-reduce is timed at several sizes (under a minute; "
                                  "runs wait meanwhile)"));
  if (running) return;   // the progress lines speak meanwhile
  const MachineCalibration* m = calibration();
  if (!m) {
    calibration_status_->setText(tr("%1 not calibrated: no predictions yet").arg(QString::fromStdString(model_name(model_from_text(shown_model())))));
  } else {
    const Calibration& c = m->calibration;
    calibration_status_->setText(tr("%1 calibrated %2 · %3 core(s) · %4")
                                     .arg(QString::fromStdString(model_name(model_from_text(shown_model()))), format_date(m->measured_at))
                                     .arg(c.cores)
                                     .arg(QString::fromStdString(c.device)));
  }
  calibration_status_->setToolTip(calibration_status_->text());
}

PredictionScope InsightPanel::scope() const {
  const ShownRun* primary = primary_run(runs_);
  return prediction_scope(primary ? &primary->record.config : nullptr, calibration(), history_->runs(), link_gbps());
}

const TimelineSource* InsightPanel::timeline_source(const ShownRun* primary) const {
  if (!primary) return nullptr;
  if (live_timeline_ && (primary->live ? live_timeline_->live : live_timeline_->run_id == primary->record.id))
    return &*live_timeline_;
  if (primary->live) return nullptr;
  const std::string& id = primary->record.id;
  auto it = trace_timelines_.find(id);
  if (it == trace_timelines_.end()) {
    std::optional<TimelineSource> source;
    if (history_->has_trace(id)) {
      try {
        std::ifstream in(history_->store().trace_file_for(id), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        source = timeline_from_trace(text.str(), primary->record);
      } catch (const std::exception& e) {
        spdlog::warn("Could not read the trace of run {}: {}", id, e.what());
      }
    }
    it = trace_timelines_.emplace(id, std::move(source)).first;
  }
  return it->second ? &*it->second : nullptr;
}

InsightContents InsightPanel::contents() const {
  InsightContents c;
  const ShownRun* primary = primary_run(runs_);
  c.epoch_time = build_chart(ChartKind::EpochTime, runs_, options_);
  c.breakdown = build_breakdown(runs_, primary && primary->live && live_epoch_ ? &*live_epoch_ : nullptr);
  c.timeline = build_timeline(timeline_source(primary), primary ? primary->label : QString());
  c.prediction = build_prediction_chart(calibration(), scope(), history_->runs(), primary);
  return c;
}

void InsightPanel::refresh_if_dirty() {
  if (dirty_ && isVisible()) refresh_now();
}

void InsightPanel::refresh_now() {
  dirty_ = false;
  const InsightContents c = contents();
  apply_content(epoch_time_view_->chart(), c.epoch_time);
  breakdown_view_->set_content(c.breakdown);
  timeline_view_->set_content(c.timeline);
  apply_content(prediction_view_->chart(), c.prediction);
}

void InsightPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  refresh_now();
}

QImage InsightPanel::render_image(QSize size, std::optional<InsightChart> chart) const {
  QString title = tr("mirrorbench · where the time goes");
  if (const ShownRun* primary = primary_run(runs_)) {
    // The runs' full names, as the training charts' export writes them.
    title += QStringLiteral(" · %1").arg(run_label(primary->record));
    if (const ShownRun* b = baseline_of(runs_, *primary)) title += tr(" vs %1").arg(run_label(b->record));
    title += QStringLiteral(" · %1").arg(format_date(primary->record.config.start_time).left(10));
  }
  return render_insight_image(contents(), chart, title, size);
}

bool InsightPanel::export_breakdown_csv(const QString& file, QString* error) const {
  const ShownRun* primary = primary_run(runs_);
  bool any = false;
  if (primary)
    for (const auto& e : primary->record.epochs) any = any || !e.replica_times.empty();
  if (!any) {
    if (error) *error = tr("The run on display has no per-replica breakdown to write to %1").arg(file);
    return false;
  }
  const bool ok = save_text(breakdown_csv(primary->record), file, error);
  if (ok) spdlog::info("Exported the breakdown of {} to {}", primary->record.id, file.toStdString());
  return ok;
}

bool InsightPanel::export_predictions(const QString& file, QString* error) const {
  const MachineCalibration* m = calibration();
  if (!m) {
    if (error) *error = tr("Not calibrated: press Calibrate before exporting predictions to %1").arg(file);
    return false;
  }
  const bool ok = save_predictions(*m, scope(), file, error);
  if (ok) spdlog::info("Exported the predictions to {}", file.toStdString());
  return ok;
}

void InsightPanel::export_dialog(bool predictions, bool json) {
  const QString name = predictions ? (json ? QStringLiteral("mirrorbench-predictions.json") : QStringLiteral("mirrorbench-predictions.csv"))
                                   : QStringLiteral("mirrorbench-breakdown.csv");
  const QString filter = json ? tr("JSON (*.json)") : tr("CSV (*.csv)");
  const QString file = ask_export_file(this, predictions ? tr("Export predictions") : tr("Export breakdown"), name, filter);
  if (file.isEmpty()) return;
  QString error;
  const bool ok = predictions ? export_predictions(file, &error) : export_breakdown_csv(file, &error);
  if (!ok) QMessageBox::warning(this, tr("Export"), error);
  else confirm_export(this, file);
}

}  // namespace mb

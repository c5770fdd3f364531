// The workbench window: wiring between the setup panel, the run controller, the history and
// the charts. All training happens on the controller's thread; this class only sees values.
#include "app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDataStream>
#include <QDateTime>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <spdlog/spdlog.h>

#include "app/app_icon.h"
#include "app/shown_runs.h"
#include "backends/devices.h"
#include "backends/registry.h"
#include "charts/chart_panel.h"
#include "common/export_file.h"
#include "common/format.h"
#include "common/wheel_guard.h"
#include "experiment/comparison_report.h"
#include "export/export_dialog.h"
#include "export/exporter.h"
#include "history/history_model.h"
#include "history/history_view.h"
#include "history/store_location.h"
#include "insight/insight_panel.h"
#include "insight/prediction.h"
#include "log/log_panel.h"
#include "run/progress_panel.h"
#include "setup/run_setup_panel.h"
#include "sweep/sweep_export.h"
#include "sweep/sweep_panel.h"
#include "teach/step_view.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb {

namespace {

DeviceInventory safe_query_devices() {
  try {
    return query_devices();
  } catch (const std::exception& e) {   // a broken driver must not keep the window from opening
    DeviceInventory inv;
    inv.cpu_cores = cpu_core_count();
    inv.cpu_name = cpu_model_name();
    inv.gpu_note = e.what();
    return inv;
  }
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  register_metatypes();
  setWindowTitle(tr("mirrorbench: mirrored training workbench"));
  setWindowIcon(app_icon());

  // Logging first, so everything below (history warnings included) reaches the log panel.
  log_ = new LogPanel(this);
  log_bridge_ = new LogBridge(this);
  connect(log_bridge_, &LogBridge::record, log_, &LogPanel::append, Qt::QueuedConnection);
  log_registration_ = std::make_unique<LogSinkRegistration>(log_bridge_);

  history_ = new HistoryModel(RunStore(default_store_root()), this);
  controller_ = new RunController(this);
  setup_ = new RunSetupPanel(safe_query_devices(), controller_->launcher(), this);
  charts_ = new ChartPanel(this);
  insight_ = new InsightPanel(history_, this);
  insight_->set_calibration_file(history_->store().root() / "calibration.json");
  controller_->set_store(history_->store());   // every run is saved there, with its Chrome trace
  progress_ = new ProgressPanel(this);
  history_view_ = new HistoryView(history_, this);
  sweep_ = new SweepPanel(this);
  step_ = new StepPanel(this);

  live_tick_ = new QTimer(this);
  live_tick_->setInterval(kLiveTickMs);
  connect(live_tick_, &QTimer::timeout, this, &MainWindow::show_live_step);

  build_layout();
  build_menus();
  connect_parts();

  restore_settings();
  load_warnings_ = history_->reload();
  if (!load_warnings_.empty())
    statusBar()->showMessage(tr("%n run file(s) could not be read and were skipped (see Log)", nullptr,
                                int(load_warnings_.size())), 10000);
  spdlog::info("mirrorbench {} · {} · runs in {}", version(), components_summary(),
               history_->store().root().string());
  if (!history_->runs().empty()) history_view_->select_ids({history_->runs().back().id});
  update_shown();
}

// The setup column (fields that scroll, action buttons always in view) beside the views'
// tabs, with the runs and the log under them, and the progress line as the status bar.
void MainWindow::build_layout() {
  // The setup fields scroll vertically when the screen is short (never sideways: the column
  // is as wide as they need); the buttons stay below them, always in view. The scroll bar's
  // room is always kept (as CSS's scrollbar-gutter: stable), so a hint that makes the fields
  // taller than the column never narrows them and moves every field below it.
  auto* setup_scroll = new QScrollArea(this);
  setup_scroll->setObjectName("setup_scroll");
  setup_scroll->setWidget(setup_);
  setup_scroll->setWidgetResizable(true);
  setup_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setup_scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  setup_scroll->setFrameShape(QFrame::NoFrame);
  scroll_past_unfocused_fields(setup_);   // the wheel scrolls the column, not the field under it
  auto* setup_column = new QWidget(this);
  setup_column->setObjectName("setup_column");
  auto* setup_layout = new QVBoxLayout(setup_column);
  setup_layout->setContentsMargins(0, 0, 0, 0);
  setup_layout->setSpacing(0);
  setup_layout->addWidget(setup_scroll, 1);
  setup_layout->addWidget(setup_->actions());
  setup_column->setMinimumWidth(setup_->minimumSizeHint().width() +
                                setup_scroll->verticalScrollBar()->sizeHint().width());

  view_tabs_ = new QTabWidget(this);
  view_tabs_->setObjectName("view_tabs");
  view_tabs_->setDocumentMode(true);
  view_tabs_->addTab(charts_, tr("Training"));
  view_tabs_->addTab(insight_, tr("Where the time goes"));
  view_tabs_->addTab(sweep_, tr("Sweep"));
  view_tabs_->addTab(step_, tr("One step"));
  view_tabs_->setTabToolTip(1, tr("Compute, communication and waiting per replica; the last steps; the scaling predictor"));
  view_tabs_->setTabToolTip(2, tr("The batch-size sweep: time per epoch, accuracy and time to a target accuracy"));
  view_tabs_->setTabToolTip(3, tr("One training step drawn for a class: the batch, the replicas, the all-reduce, the update"));
  // The views keep their full size by default; dragged shorter to give the runs more rows,
  // they scroll instead of being squeezed (and never sideways: as wide as the column).
  auto* chart_area = new QScrollArea(this);
  chart_area->setObjectName("view_scroll");
  chart_area->setWidget(view_tabs_);
  chart_area->setWidgetResizable(true);
  chart_area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  chart_area->setFrameShape(QFrame::NoFrame);
  chart_area->setMinimumWidth(view_tabs_->minimumSizeHint().width());

  history_view_->add_page(log_, tr("Log"));   // the Runs tab and the Log tab under the views

  // Window height that grows or shrinks goes to the views; the runs keep theirs (at least
  // HistoryView::kMinimumRows rows: the table's minimum height).
  right_split_ = new QSplitter(Qt::Vertical, this);
  right_split_->setObjectName("right_split");
  right_split_->addWidget(chart_area);
  right_split_->addWidget(history_view_);
  right_split_->setStretchFactor(0, 1);
  right_split_->setStretchFactor(1, 0);
  right_split_->setCollapsible(0, false);
  main_split_ = new QSplitter(Qt::Horizontal, this);
  main_split_->setObjectName("main_split");
  main_split_->addWidget(setup_column);
  main_split_->addWidget(right_split_);
  main_split_->setStretchFactor(1, 1);
  setCentralWidget(main_split_);

  // The status bar is there from the start, so it never appears (and grows the window) with
  // the first message. The progress line fills it as a permanent widget, which QStatusBar
  // does not hide for a message: the line shows the message itself, in place of its details.
  auto* status = new QStatusBar(this);
  status->setObjectName("status_bar");
  status->addPermanentWidget(progress_, 1);
  connect(status, &QStatusBar::messageChanged, progress_, &ProgressPanel::show_status);
  setStatusBar(status);
}

// What each part's signals do: the setup's buttons start plans, the controller's run events
// reach the charts, history and progress, and the exports open their dialogs.
void MainWindow::connect_parts() {
  connect(setup_, &RunSetupPanel::run_clicked, this, [this] { start_plan(PlanKind::Single); });
  connect(setup_, &RunSetupPanel::compare_clicked, this, [this] { start_plan(PlanKind::Compare); });
  connect(setup_, &RunSetupPanel::reference_clicked, this, [this] { start_plan(PlanKind::Reference); });
  connect(setup_, &RunSetupPanel::sweep_clicked, this, [this] { start_plan(PlanKind::Sweep); });
  connect(setup_, &RunSetupPanel::lock_step_vs_balanced_clicked, this, [this] { start_plan(PlanKind::Balance); });
  connect(setup_, &RunSetupPanel::bare_vs_remedy_clicked, this, [this] { start_plan(PlanKind::Remedy); });
  connect(setup_, &RunSetupPanel::stop_clicked, this, &MainWindow::stop);
  connect(sweep_, &SweepPanel::settings_changed, this, [this] { setup_->set_sweep_problem(sweep_->settings_problem()); });
  connect(sweep_, &SweepPanel::export_png_requested, this, [this] { export_sweep_dialog(0); });
  connect(sweep_, &SweepPanel::export_csv_requested, this, [this] { export_sweep_dialog(1); });
  connect(sweep_, &SweepPanel::export_json_requested, this, [this] { export_sweep_dialog(2); });
  connect(step_, &StepPanel::export_requested, this, &MainWindow::export_step_dialog);
  connect(controller_, &RunController::plan_started, this, &MainWindow::on_plan_started);
  connect(controller_, &RunController::run_started, this, &MainWindow::on_run_started);
  connect(controller_, &RunController::step_progress, this, &MainWindow::on_step);
  connect(controller_, &RunController::epoch_finished, this, &MainWindow::on_epoch);
  connect(controller_, &RunController::run_finished, this, &MainWindow::on_run_finished);
  connect(controller_, &RunController::run_rejected, this, &MainWindow::on_run_rejected);
  connect(controller_, &RunController::plan_finished, this, &MainWindow::on_plan_finished);
  connect(controller_, &RunController::device_stuck, this, [this](const QString& why) {
    const QString text = tr("A device stopped answering and its thread cannot be ended: %1\n\nRestart mirrorbench to "
                            "use the devices again.").arg(why);
    setup_->show_error(text);
    spdlog::error("{}", text.toStdString());
    if (!scripted_) QMessageBox::critical(this, tr("Restart mirrorbench"), text);
  });
  connect(controller_, &RunController::status, this, [this](const QString& s) {
    progress_->show_message(s);
    statusBar()->showMessage(s, 5000);
  });
  connect(history_view_, &HistoryView::selection_changed, this, &MainWindow::update_shown);
  connect(history_view_, &HistoryView::export_csv_requested, this, &MainWindow::export_csv_dialog);
  connect(history_, &HistoryModel::runs_changed, this, &MainWindow::update_shown);
  connect(charts_, &ChartPanel::export_requested, this, [this] { export_png_dialog(false); });
  // A scripted run leaves the user's settings alone (as save_settings() does).
  connect(charts_, &ChartPanel::options_changed, this, [this] {
    insight_->set_runs(charts_->runs(), charts_->options());
    if (!scripted_) settings_.set_chart_options(charts_->options());
  });
  connect(history_view_, &HistoryView::export_trace_requested, this, &MainWindow::export_trace_dialog);
  connect(insight_, &InsightPanel::export_png_requested, this, [this] { export_png_dialog(true); });
  connect(insight_, &InsightPanel::calibration_changed, this, &MainWindow::update_shown);
  const auto calibration_to_setup = [this] {
    setup_->set_calibration(insight_->calibration() ? &insight_->calibration()->calibration : nullptr);
  };
  connect(insight_, &InsightPanel::calibration_changed, this, calibration_to_setup);
  calibration_to_setup();   // the one kept from an earlier launch
  // Calibrating keeps every core busy: no run starts meanwhile (Stop cancels it).
  connect(insight_, &InsightPanel::calibration_running, this, [this](bool running) {
    if (!controller_->busy()) setup_->set_busy(running);
    if (running) progress_->show_message(tr("Calibrating this machine for the scaling predictor…"));
    else progress_->idle(tr("Calibration ended (see Where the time goes)."), false);
  });
  connect(log_, &LogPanel::level_changed, this, [this](int level) {
    if (!scripted_) settings_.set_log_level(level);
  });
}

MainWindow::~MainWindow() {
  destroying_ = true;
  // Join the trainer before any child goes away; its final record is still saved.
  controller_->shutdown();
  log_registration_.reset();
}

void MainWindow::build_menus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* png = file->addAction(tr("Export charts as &PNG…"), this,
                                 [this] { export_png_dialog(view_tabs_->currentWidget() == insight_); });
  png->setShortcut(QKeySequence(tr("Ctrl+E")));
  QAction* csv = file->addAction(tr("Export runs as &CSV…"), this, &MainWindow::export_csv_dialog);
  csv->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
  file->addAction(tr("Export sweep as P&NG…"), this, [this] { export_sweep_dialog(0); });
  file->addAction(tr("Export sweep as CS&V…"), this, [this] { export_sweep_dialog(1); });
  file->addAction(tr("Export sweep as &JSON…"), this, [this] { export_sweep_dialog(2); });
  file->addAction(tr("Export one step as PN&G…"), this, &MainWindow::export_step_dialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run->addAction(tr("&Run"), QKeySequence(tr("Ctrl+R")), this, [this] { start_plan(PlanKind::Single); });
  run->addAction(tr("&Compare with one device"), QKeySequence(tr("Ctrl+Shift+R")), this,
                 [this] { start_plan(PlanKind::Compare); });
  run->addAction(tr("Reference &experiment"), this, [this] { start_plan(PlanKind::Reference); });
  run->addAction(tr("S&weep (the Sweep tab's batch sizes, models or links)"), this, [this] { start_plan(PlanKind::Sweep); });
  run->addAction(tr("&Lock-step vs balanced"), this, [this] { start_plan(PlanKind::Balance); });
  run->addAction(tr("&Bare vs remedy"), this, [this] { start_plan(PlanKind::Remedy); });
  run->addAction(tr("&Stop"), QKeySequence(tr("Ctrl+.")), this, &MainWindow::stop);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About mirrorbench"), this, [this] {
    QMessageBox::about(this, tr("About mirrorbench"),
                       tr("<h3>mirrorbench %1</h3><p>Data-parallel (mirrored) CNN training on CPU replicas and "
                          "GPUs, compared against one device.</p><p>%2</p><p>Runs are stored in<br><tt>%3</tt></p>")
                           .arg(QString::fromStdString(version()), QString::fromStdString(components_summary()),
                                QString::fromStdString(history_->store().runs_dir().string()).toHtmlEscaped()));
  });
}

void MainWindow::restore_settings() {
  TrainConfig config = settings_.last_config();
  if (!settings_.has_last_config()) config.devices = setup_->all_devices();   // first launch
  setup_->set_recent_data_dirs(settings_.recent_data_dirs());
  setup_->set_config(config);
  // Without mpirun now, the group says so and runs stay in this process.
  setup_->set_processes(controller_->launcher().available() ? settings_.last_processes() : 1,
                        settings_.last_hostfile());
  charts_->set_options(settings_.chart_options());
  sweep_->set_settings(settings_.sweep());
  setup_->set_sweep_problem(sweep_->settings_problem());
  log_->set_level(settings_.log_level());
  fit_pending_ = !restoreGeometry(settings_.window_geometry());
  if (fit_pending_) fit_to_screen();
  QByteArray state = settings_.window_state();
  QDataStream in(&state, QIODevice::ReadOnly);
  QByteArray main_state, right_state;
  in >> main_state >> right_state;
  if (main_state.isEmpty() || !main_split_->restoreState(main_state)) {
    const int left = main_split_->widget(0)->minimumWidth();
    main_split_->setSizes({left, std::max(1, width() - left)});
  }
  if (right_state.isEmpty() || !right_split_->restoreState(right_state)) {
    // The runs at their minimum (HistoryView::kMinimumRows rows), the views the rest; they
    // also take whatever the window grows by (the runs' stretch is 0).
    const int runs = right_split_->widget(1)->minimumSizeHint().height();
    right_split_->setSizes({std::max(1, height() - runs), runs});
  }
}

// The default geometry: the whole available area of the screen the window opens on (a laptop,
// a projector, a large monitor alike), centred.
void MainWindow::fit_to_screen() {
  const QScreen* where = screen() ? screen() : QGuiApplication::primaryScreen();
  if (!where) return;   // no screen to fit (Qt's default size stays)
  const QRect available = where->availableGeometry();
  // The frame (title bar, borders) comes on top of the size given: leave room for it, as much
  // as it takes where it is known (showEvent fits again once shown), else what window managers
  // commonly take (an X11 manager reports its frame only after the window is mapped).
  QSize frame = frameGeometry().size() - geometry().size();
  if (frame == QSize(0, 0)) frame = QSize(8, 32);
  resize(available.size() - frame);
  QRect placed(QPoint(0, 0), size() + frame);   // where the frame goes, the window in it
  placed.moveCenter(available.center());
  move(placed.topLeft());
}

void MainWindow::save_settings() {
  if (scripted_) return;   // a scripted run must not overwrite the user's last configuration
  settings_.set_last_config(setup_->config());
  settings_.set_last_launch(setup_->processes(), setup_->hostfile());
  settings_.set_recent_data_dirs(setup_->recent_data_dirs());
  QByteArray state;
  QDataStream out(&state, QIODevice::WriteOnly);
  out << main_split_->saveState() << right_split_->saveState();
  settings_.set_window(saveGeometry(), state);
  settings_.set_chart_options(charts_->options());
  if (sweep_->settings_problem().isEmpty()) settings_.set_sweep(sweep_->settings());
  settings_.set_log_level(log_->level());
  settings_.sync();
}

bool MainWindow::start_plan(PlanKind kind) {
  const int processes = setup_->processes();
  const std::string hostfile = processes > 1 ? setup_->hostfile().toStdString() : std::string();
  if (kind == PlanKind::Sweep) return start_sweep(sweep_->options(setup_->config()), processes, hostfile);
  TrainConfig config = setup_->config();
  if (kind == PlanKind::Reference) {
    // The fields show what the preset means while it runs, and come back as they were after
    // it (a practice setup of 2 epochs and 4,096 images must not become 5 and all).
    preset_restore_ = config;
    config = reference_request(config, processes, setup_->all_devices());
    setup_->set_config(config);
  }
  const bool started = start_plan(kind, config, processes, hostfile);
  if (!started) restore_preset_fields();
  return started;
}

bool MainWindow::start_plan(PlanKind kind, const TrainConfig& config, int processes, const std::string& hostfile) {
  if (kind == PlanKind::Sweep) return start_sweep(sweep_->options(config), processes, hostfile);
  return start(PlanRequest{kind, config, processes, hostfile, {}});
}

bool MainWindow::start_sweep(const SweepOptions& options, int processes, const std::string& hostfile) {
  const QString sweep_problem = sweep_->settings_problem();
  if (!sweep_problem.isEmpty()) {
    refuse(tr("Sweep: %1").arg(sweep_problem));
    return false;
  }
  return start(PlanRequest{PlanKind::Sweep, options.base, processes, hostfile, options});
}

// Every plan starts here: the core makes and checks it (experiment/planner.h), the controller
// runs it.
bool MainWindow::start(const PlanRequest& request) {
  if (controller_->busy()) return false;
  if (insight_->calibrating()) {
    statusBar()->showMessage(tr("Calibrating: the run can start when the calibration has finished (Stop cancels it)"), 8000);
    return false;
  }
  Plan plan;
  try {
    plan = make_plan(request, &setup_->inventory());
  } catch (const Error& e) {
    refuse(QString::fromStdString(e.what()));
    return false;
  }
  if (request.kind == PlanKind::Sweep) {
    SweepOptions shown = request.sweep;
    shown.base = request.config;
    sweep_->start(shown);
  }
  if (!scripted_) {
    settings_.set_last_config(preset_restore_ ? *preset_restore_ : setup_->config());
    settings_.set_last_launch(setup_->processes(), setup_->hostfile());
    if (request.kind == PlanKind::Sweep) settings_.set_sweep(sweep_->settings());
  }
  if (request.kind == PlanKind::Sweep) {
    spdlog::info("Sweep over the {}: {} configuration(s) on {}, {} epoch(s) each, target {:.1f} % validation accuracy",
                 to_string(request.sweep.axis), plan.runs.size(), format_devices(request.config.devices), request.config.epochs,
                 100 * request.sweep.target_val_acc);
    view_tabs_->setCurrentWidget(sweep_);
  } else if (request.kind == PlanKind::Compare || request.kind == PlanKind::Reference || request.kind == PlanKind::Remedy ||
             view_tabs_->currentWidget() == sweep_) {
    view_tabs_->setCurrentWidget(charts_);   // a comparison is read on the training charts and the card
  }
  controller_->start(std::move(plan));
  return true;
}

// The fields a preset replaced while its plan ran, as the user had them.
void MainWindow::restore_preset_fields() {
  if (!preset_restore_) return;
  setup_->set_config(*preset_restore_);
  preset_restore_.reset();
}

// Why a plan did not start: under the fields, in the status line and (scripted mode has no
// panel to read it from) in the log.
void MainWindow::refuse(const QString& why) {
  setup_->show_error(why);
  statusBar()->showMessage(why.section('\n', 0, 0), 8000);
  spdlog::warn("{}", why.toStdString());
}

void MainWindow::stop() {
  if (insight_->calibrating()) insight_->cancel_calibration();
  if (!controller_->busy()) return;
  progress_->show_message(tr("Stopping after the current step…"));
  spdlog::info("Stop requested");
  controller_->stop();
}

std::vector<std::string> MainWindow::shown_run_ids() const {
  std::vector<std::string> ids = history_view_->selected_ids();
  if (ids.empty() && !live_ && !controller_->busy() && !history_->runs().empty())
    ids.push_back(history_->runs().back().id);   // nothing selected: show the latest run
  return ids;
}

void MainWindow::update_shown() {
  std::vector<ShownRun> runs = shown_runs(live_ ? &*live_ : nullptr, shown_run_ids(), *history_);
  const CalibrationLookup calibration_of = [this](const std::string& model) {
    return insight_->calibration_to_predict(model);
  };
  add_predictions(runs, calibration_of, insight_->link_gbps());
  add_diagnoses(runs, *history_, calibration_of);
  insight_->set_runs(runs, charts_->options());
  charts_->set_runs(std::move(runs));
}

void MainWindow::show_insight(bool on) { view_tabs_->setCurrentWidget(on ? static_cast<QWidget*>(insight_) : charts_); }

void MainWindow::on_plan_started(PlanKind kind, int runs) {
  plan_ids_.clear();
  plan_kind_ = kind;
  setup_->set_busy(true);
  sweep_->set_busy(true);
  insight_->set_machine_busy(true);
  history_view_->select_ids({});
  spdlog::info("{}: {} run(s)", to_string(kind), runs);
}

void MainWindow::on_run_started(int index, const RunConfig& config) {
  ShownRun live;
  live.record.id = "live";
  live.record.config = config;
  live.live = true;
  live.label = default_run_name(config);
  live_ = std::move(live);
  insight_->run_started(config);
  progress_->run_started(index, controller_->plan_size(), live_->label);
  if (plan_kind_ == PlanKind::Sweep) sweep_->run_started(index, config);
  step_->run_started(config);
  // At teaching pace the class follows the steps: show them.
  if (config.step_delay_s > 0) view_tabs_->setCurrentWidget(step_);
  update_shown();
}

// Every report is kept (the traces get every point), but drawn only on the live tick.
void MainWindow::on_step(const StepProgress& p) {
  if (p.has_detail) pending_detail_ = p;
  pending_step_ = p;
  if (live_) {
    const double x = (p.epoch - 1) + double(p.step) / double(std::max<int64_t>(1, p.steps));
    live_->loss_trace.append(QPointF(x, p.running_loss));
    live_->acc_trace.append(QPointF(x, p.running_acc));
  }
  if (!live_tick_->isActive()) live_tick_->start();
}

void MainWindow::show_live_step() {
  if (!pending_step_) {
    live_tick_->stop();   // nothing new since the last tick: idle until the next report
    return;
  }
  progress_->show_step(*pending_step_);
  insight_->show_step(*pending_step_);
  if (pending_detail_) step_->show_step(*pending_detail_);
  // Only the traces changed: hand them over and let the chart timer redraw.
  if (live_) charts_->set_live_traces(live_->loss_trace, live_->acc_trace);
  pending_step_.reset();
  pending_detail_.reset();
}

void MainWindow::on_epoch(const EpochMetrics& m) {
  if (plan_kind_ == PlanKind::Sweep) sweep_->epoch(m);
  if (!live_) return;
  live_->record.epochs.push_back(m);
  update_shown();
}

void MainWindow::on_run_finished(int index, const RunRecord& record, const QString& save_error) {
  show_live_step();   // the last reports before the run's end
  live_.reset();
  if (plan_kind_ == PlanKind::Sweep) sweep_->run_finished(index, record);
  step_->run_finished();
  insight_->run_finished(record);
  // The plan executor saved it (and pinned a completed baseline): show it.
  history_->add_saved(record);
  if (!save_error.isEmpty()) statusBar()->showMessage(tr("The run could not be saved: %1").arg(save_error), 10000);
  plan_ids_.push_back(record.id);
  if (record.status == RunStatus::Failed) {
    setup_->show_error(tr("Run failed: %1").arg(QString::fromStdString(record.error)));
  }
  spdlog::info("Run {} {} ({} epoch(s), mean {:.2f} s/epoch)", record.id, to_string(record.status),
               record.epochs.size(), record.mean_epoch_time());
  history_view_->select_ids(plan_ids_);
}

void MainWindow::on_run_rejected(int, const QString& message) {
  live_.reset();
  step_->run_finished();
  setup_->show_error(message);
  statusBar()->showMessage(message, 10000);
}

void MainWindow::on_plan_finished(PlanKind kind, bool ok, bool stopped) {
  setup_->set_busy(false);
  restore_preset_fields();
  if (kind == PlanKind::Sweep) sweep_->finished(stopped);
  sweep_->set_busy(false);
  insight_->set_machine_busy(false);
  QString summary = stopped ? tr("Stopped.") : ok ? tr("Finished.") : tr("Finished with errors (see Log).");
  if (kind == PlanKind::Sweep) log_sweep_result(&summary);
  else if (kind != PlanKind::Single) log_plan_result(kind, &summary);
  progress_->idle(summary, ok);
  statusBar()->showMessage(summary, 15000);
  update_shown();
  charts_->refresh_now();
  emit plan_done(ok);
  if (closing_ && !destroying_) QTimer::singleShot(0, this, &QWidget::close);
}

// A finished comparison: its numbers in the status line, and the verdict as core/experiment
// writes it (the same text a CLI prints) in the log.
void MainWindow::log_plan_result(PlanKind kind, QString* summary) const {
  if (plan_ids_.size() != 2) return;
  const RunRecord* base = history_->find(plan_ids_[0]);
  const RunRecord* run = history_->find(plan_ids_[1]);
  if (!base || !run || base->status != RunStatus::Completed || run->status != RunStatus::Completed) return;
  const RunComparison c = compare_runs(*base, *run);   // the plan's own baseline
  if (!c.time) return;
  *summary = tr("%1 vs %2: %3 time per epoch (%4 s → %5 s), val acc %6.")
                 .arg(run_label(*run), run_label(*base), format_reduction(c.time->reduction))
                 .arg(c.time->baseline_s, 0, 'f', 2)
                 .arg(c.time->run_s, 0, 'f', 2)
                 .arg(format_percent(run->epochs.back().val_acc, 2));
  spdlog::info("{}", summary->toStdString());
  // Lock-step vs balanced, bare vs remedy: two runs of the same devices, not a single-device
  // baseline's verdict.
  if (!c.verdict || kind == PlanKind::Balance || kind == PlanKind::Remedy) return;
  spdlog::info("{}, the verdict:", to_string(kind));
  const std::string text = comparison_text(*run, c);
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    spdlog::info("  {}", text.substr(at, end - at));
  }
}

// A finished sweep: the core's verdict in the status line, its table in the log (the text
// mirrorbench-cli sweep prints).
void MainWindow::log_sweep_result(QString* summary) const {
  const SweepSummary s = sweep_->progress().summary();
  if (s.best < 0) return;
  *summary = QString::fromStdString(s.verdict);
  spdlog::info("Sweep, the result:");
  const std::string text = sweep_text(s);
  for (std::size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    spdlog::info("  {}", text.substr(at, end - at));
  }
}

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (!fit_pending_) return;
  fit_pending_ = false;
  fit_to_screen();   // the frame's size is known now
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (controller_->busy()) {
    // Stop cleanly first (within one step); the partial run is saved as "stopped" and the
    // window closes when the plan reports back.
    closing_ = true;
    stop();
    event->ignore();
    return;
  }
  save_settings();
  event->accept();
}

bool MainWindow::export_png(const QString& file, QSize size, std::optional<ChartKind> chart, QString* error) {
  charts_->refresh_now();
  const bool ok = save_png(render_charts_image(charts_->runs(), charts_->options(), chart, size), file, error);
  if (ok) spdlog::info("Exported {} ({}x{})", file.toStdString(), size.width(), size.height());
  return ok;
}

bool MainWindow::export_csv(const QString& file, QString* error) {
  // The selected runs; with nothing selected, the finished runs on the charts.
  std::vector<RunRecord> runs;
  for (const auto& id : history_view_->selected_ids()) {
    if (const RunRecord* r = history_->find(id)) runs.push_back(*r);
  }
  if (runs.empty()) {
    for (const auto& s : charts_->runs()) {
      if (!s.live) runs.push_back(s.record);
    }
  }
  const bool ok = save_runs_csv(runs, file, error);
  if (ok) spdlog::info("Exported {} run(s) to {}", runs.size(), file.toStdString());
  return ok;
}

bool MainWindow::export_sweep_png(const QString& file, QSize size, QString* error) {
  const bool ok = save_png(sweep_->render(size), file, error);
  if (ok) spdlog::info("Exported the sweep to {} ({}x{})", file.toStdString(), size.width(), size.height());
  return ok;
}

bool MainWindow::export_sweep_csv(const QString& file, QString* error) {
  const bool ok = save_sweep_csv(sweep_->progress(), file, error);
  if (ok) spdlog::info("Exported the sweep to {}", file.toStdString());
  return ok;
}

bool MainWindow::export_sweep_json(const QString& file, QString* error) {
  const bool ok = save_sweep_json(sweep_->progress(), file, error);
  if (ok) spdlog::info("Exported the sweep to {}", file.toStdString());
  return ok;
}

bool MainWindow::export_step_png(const QString& file, QSize size, QString* error) {
  const bool ok = save_png(step_->render(size), file, error);
  if (ok) spdlog::info("Exported one step to {} ({}x{})", file.toStdString(), size.width(), size.height());
  return ok;
}

void MainWindow::export_sweep_dialog(int format) {
  if (sweep_->progress().empty()) {
    statusBar()->showMessage(tr("No sweep to export yet: press Sweep first"), 8000);
    return;
  }
  static const char* const names[] = {"mirrorbench-sweep.png", "mirrorbench-sweep.csv", "mirrorbench-sweep.json"};
  const QString filters[] = {tr("PNG images (*.png)"), tr("CSV (*.csv)"), tr("JSON (*.json)")};
  const QString file = ask_export_file(this, tr("Export sweep"), QString::fromLatin1(names[format]), filters[format]);
  if (file.isEmpty()) return;
  QString error;
  const bool ok = format == 0   ? export_sweep_png(file, settings_.export_size(), &error)
                  : format == 1 ? export_sweep_csv(file, &error)
                                : export_sweep_json(file, &error);
  if (!ok) QMessageBox::warning(this, tr("Export sweep"), error);
  else confirm_export(this, file);
}

void MainWindow::export_step_dialog() {
  const QString file =
      ask_export_file(this, tr("Export one step as PNG"), QStringLiteral("mirrorbench-step.png"), tr("PNG images (*.png)"));
  if (file.isEmpty()) return;
  QString error;
  if (!export_step_png(file, QSize(StepPanel::kDefaultExportWidth, StepPanel::kDefaultExportHeight), &error))
    QMessageBox::warning(this, tr("Export one step"), error);
  else confirm_export(this, file);
}

void MainWindow::export_png_dialog(bool insight_page) {
  ExportDialog dialog(settings_.export_size(), this, insight_page);
  if (dialog.exec() != QDialog::Accepted) return;
  settings_.set_export_size(dialog.size());
  QString name = dialog.chart() ? QStringLiteral("mirrorbench-%1.png").arg(chart_name(*dialog.chart()))
                                : QStringLiteral("mirrorbench-charts.png");
  if (dialog.insight())
    name = dialog.insight_chart() ? QStringLiteral("mirrorbench-%1.png").arg(insight_chart_name(*dialog.insight_chart()))
                                  : QStringLiteral("mirrorbench-where-the-time-goes.png");
  const QString file = ask_export_file(this, tr("Export PNG"), name, tr("PNG images (*.png)"));
  if (file.isEmpty()) return;
  QString error;
  const bool ok = dialog.insight() ? export_insight_png(file, dialog.size(), dialog.insight_chart(), &error)
                                   : export_png(file, dialog.size(), dialog.chart(), &error);
  if (!ok) QMessageBox::warning(this, tr("Export PNG"), error);
  else confirm_export(this, file);
}

bool MainWindow::export_insight_png(const QString& file, QSize size, std::optional<InsightChart> chart, QString* error) {
  charts_->refresh_now();
  const bool ok = save_png(insight_->render_image(size, chart), file, error);
  if (ok) spdlog::info("Exported {} ({}x{})", file.toStdString(), size.width(), size.height());
  return ok;
}

bool MainWindow::export_trace(const std::string& run_id, const QString& file, QString* error) {
  const bool ok = mb::export_trace(history_->store(), run_id, file, error);
  if (ok) spdlog::info("Exported the trace of {} to {}", run_id, file.toStdString());
  return ok;
}

void MainWindow::export_trace_dialog() {
  const auto ids = history_view_->selected_ids();
  if (ids.size() != 1 || !history_->has_trace(ids.front())) return;
  const QString file = ask_export_file(this, tr("Export Chrome trace"),
                                      QStringLiteral("mirrorbench-%1.trace.json").arg(QString::fromStdString(ids.front())),
                                      tr("Chrome trace (*.json)"));
  if (file.isEmpty()) return;
  QString error;
  if (!export_trace(ids.front(), file, &error)) QMessageBox::warning(this, tr("Export trace"), error);
  else confirm_export(this, file);
}

void MainWindow::export_csv_dialog() {
  const QString file = ask_export_file(this, tr("Export runs as CSV"), QStringLiteral("mirrorbench-runs.csv"), tr("CSV (*.csv)"));
  if (file.isEmpty()) return;
  QString error;
  if (!export_csv(file, &error)) QMessageBox::warning(this, tr("Export CSV"), error);
  else confirm_export(this, file);
}

}  // namespace mb

// The workbench window: run setup on the left; on the right the live charts with the
// comparison card, the Sweep tab and the classroom view of one step; run history and log
// below them; the progress line as the status bar. Scripted mode (app/script_runner.h) drives
// this same window.
#pragma once
#include <QMainWindow>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/settings.h"
#include "charts/chart_content.h"
#include "experiment/planner.h"
#include "experiment/sweep.h"
#include "insight/insight_export.h"
#include "log/log_sink.h"
#include "run/metatypes.h"
#include "run/run_controller.h"

class QSplitter;
class QTabWidget;

namespace mb {

class ChartPanel;
class HistoryModel;
class HistoryView;
class InsightPanel;
class LogPanel;
class ProgressPanel;
class RunSetupPanel;
class StepPanel;
class SweepPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  RunSetupPanel* setup_panel() const { return setup_; }
  ChartPanel* chart_panel() const { return charts_; }
  InsightPanel* insight_panel() const { return insight_; }
  void show_insight(bool on);   // the "Where the time goes" page instead of the training charts
  HistoryModel* history() const { return history_; }
  HistoryView* history_view() const { return history_view_; }
  ProgressPanel* progress_panel() const { return progress_; }
  LogPanel* log_panel() const { return log_; }
  RunController* controller() const { return controller_; }
  SweepPanel* sweep_panel() const { return sweep_; }
  StepPanel* step_panel() const { return step_; }
  QTabWidget* view_tabs() const { return view_tabs_; }   // Training, Where the time goes, Sweep, One step
  const std::vector<std::string>& load_warnings() const { return load_warnings_; }

  // Runs a plan as the buttons do (the fields' configuration; the reference experiment's preset
  // shown in them). Returns false (and says why in place) if it cannot start.
  bool start_plan(PlanKind kind);
  // `processes` > 1: the run (not its baseline) as that many processes under mpirun, on the
  // hosts of `hostfile` if it is not empty (experiment/plans.h).
  bool start_plan(PlanKind kind, const TrainConfig& config, int processes = 1, const std::string& hostfile = {});
  // The Sweep: the options given (their batches empty: the Sweep tab's); every configuration
  // with `processes` (experiment/sweep.h).
  bool start_sweep(const SweepOptions& options, int processes = 1, const std::string& hostfile = {});
  void stop();

  // Exports of what the charts show now.
  bool export_png(const QString& file, QSize size, std::optional<ChartKind> chart, QString* error = nullptr);
  bool export_csv(const QString& file, QString* error = nullptr);   // the selected runs
  // The last sweep (its verdict, table and charts; the core's CSV and JSON) and the classroom
  // view of the last step shown.
  bool export_sweep_png(const QString& file, QSize size, QString* error = nullptr);
  bool export_sweep_csv(const QString& file, QString* error = nullptr);
  bool export_sweep_json(const QString& file, QString* error = nullptr);
  bool export_step_png(const QString& file, QSize size, QString* error = nullptr);
  // "Where the time goes": one of its charts, or (nullopt) the whole page.
  bool export_insight_png(const QString& file, QSize size, std::optional<InsightChart> chart, QString* error = nullptr);
  bool export_trace(const std::string& run_id, const QString& file, QString* error = nullptr);

  // Scripted: the user's settings are left alone, and a plan starts even when the panel
  // sees a problem (the trainer then refuses it and the script ends with a failure).
  void set_scripted(bool scripted) { scripted_ = scripted; }

 signals:
  void plan_done(bool ok);   // after the records are saved and the charts updated

 protected:
  void closeEvent(QCloseEvent* event) override;
  void showEvent(QShowEvent* event) override;

 private:
  bool start(const PlanRequest& request);
  void refuse(const QString& why);
  void restore_preset_fields();
  void build_layout();
  void build_menus();
  void connect_parts();
  void fit_to_screen();   // the default geometry: the available area of its screen, centred
  void restore_settings();
  void save_settings();
  void update_shown();
  std::vector<std::string> shown_run_ids() const;   // non-live runs on the charts (not baselines added)
  void export_png_dialog(bool insight_page = false);
  void export_csv_dialog();
  void export_trace_dialog();
  void log_plan_result(PlanKind kind, QString* summary) const;
  void log_sweep_result(QString* summary) const;
  void export_sweep_dialog(int format);   // 0 PNG, 1 CSV, 2 JSON
  void export_step_dialog();

  void on_plan_started(PlanKind kind, int runs);
  void on_run_started(int index, const RunConfig& config);
  void on_step(const StepProgress& p);
  void show_live_step();   // the latest step progress, on the live tick
  void on_epoch(const EpochMetrics& m);
  void on_run_finished(int index, const RunRecord& record, const QString& save_error);
  void on_run_rejected(int index, const QString& message);
  void on_plan_finished(PlanKind kind, bool ok, bool stopped);

  Settings settings_;
  LogBridge* log_bridge_;
  std::unique_ptr<LogSinkRegistration> log_registration_;
  HistoryModel* history_;
  RunController* controller_;
  RunSetupPanel* setup_;
  ChartPanel* charts_;
  InsightPanel* insight_;
  QTabWidget* view_tabs_;                  // training charts | where the time goes | sweep | one step
  ProgressPanel* progress_;
  HistoryView* history_view_;
  LogPanel* log_;
  QSplitter* main_split_;
  QSplitter* right_split_;
  SweepPanel* sweep_;
  StepPanel* step_;
  PlanKind plan_kind_ = PlanKind::Single;   // of the plan in progress / last plan

  std::optional<ShownRun> live_;
  std::optional<TrainConfig> preset_restore_;   // the fields before a preset (Reference) replaced them
  // Step progress arrives up to 20 times a second; the window shows the latest on a slower tick
  // (kLiveTickMs): on a 2-core machine every millisecond the window draws is taken from a
  // replica, and lock-step makes every replica wait for the one that lost it.
  static constexpr int kLiveTickMs = 250;
  QTimer* live_tick_ = nullptr;
  std::optional<StepProgress> pending_step_, pending_detail_;
  std::vector<std::string> plan_ids_;      // records of the plan in progress / last plan
  std::vector<std::string> load_warnings_;
  bool scripted_ = false;
  bool fit_pending_ = false;               // no geometry restored: fit the screen once shown
  bool closing_ = false;                   // close requested mid-run: close once stopped
  bool destroying_ = false;
};

}  // namespace mb

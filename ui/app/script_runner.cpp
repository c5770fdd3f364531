// The scripted-mode sequence: configure, run, export, exit.
#include "app/script_runner.h"

#include <QCoreApplication>
#include <QTimer>

#include <spdlog/spdlog.h>

#include "app/main_window.h"
#include "charts/chart_panel.h"
#include "insight/insight_panel.h"
#include "setup/run_setup_panel.h"
#include "sweep/sweep_panel.h"

namespace mb {

ScriptRunner::ScriptRunner(MainWindow* window, ScriptOptions options)
    : QObject(window), window_(window), options_(std::move(options)) {
  connect(window_, &MainWindow::plan_done, this, &ScriptRunner::finish);
}

void ScriptRunner::start() {
  window_->set_scripted(true);
  RunSetupPanel* panel = window_->setup_panel();
  processes_ = options_.processes.value_or(panel->processes());
  hostfile_ = processes_ > 1 ? options_.hostfile.value_or(panel->hostfile()) : QString();
  config_ = scripted_config(options_, panel->config(), processes_, panel->all_devices());
  panel->set_config(config_);
  panel->set_processes(processes_, hostfile_);
  if (options_.show_insight) window_->show_insight(true);
  if (!options_.calibrate) {
    QTimer::singleShot(0, this, &ScriptRunner::start_plan);
    return;
  }
  // The calibration first (it needs every core), then the plan.
  InsightPanel* insight = window_->insight_panel();
  connect(insight, &InsightPanel::calibration_done, this, [this](bool ok) {
    if (!ok) {
      spdlog::error("Scripted calibration failed (see the previous message)");
      finish(false);
      return;
    }
    start_plan();
  }, Qt::SingleShotConnection);
  QTimer::singleShot(0, this, [this, insight] {
    if (!insight->start_calibration()) finish(false);
  });
}

void ScriptRunner::start_plan() {
  if (!options_.start) {
    finish(true);
    return;
  }
  if (options_.kind == PlanKind::Sweep && options_.sweep) window_->sweep_panel()->set_settings(*options_.sweep);
  const bool started = window_->start_plan(options_.kind, config_, processes_, hostfile_.toStdString());
  if (!started) {
    spdlog::error("Scripted run could not start (see the previous message)");
    finish(false);
  }
}

void ScriptRunner::finish(bool ok) {
  if (finished_) return;
  finished_ = true;
  window_->chart_panel()->refresh_now();
  window_->insight_panel()->refresh_now();
  // The exports render from the chart descriptions and need no wait. A screenshot grabs the
  // window, and Qt Charts lays out and repaints on later event-loop passes: only then let it
  // settle first so the window shows the final state.
  if (options_.screenshot.isEmpty()) {
    write_outputs(ok);
    return;
  }
  QTimer::singleShot(300, this, [this, ok] { write_outputs(ok); });
}

void ScriptRunner::write_outputs(bool ok) {
  int code = ok ? kExitOk : kExitRunFailed;
  QString error;
  auto check = [&](bool written) {
    if (written) return;
    spdlog::error("{}", error.toStdString());
    code = kExitExportFailed;
  };
  // A sweep's outputs are the sweep's: its table and charts, the core's CSV and JSON.
  const bool sweep = options_.start && options_.kind == PlanKind::Sweep;
  if (!options_.export_png.isEmpty())
    check(sweep ? window_->export_sweep_png(options_.export_png, options_.export_size, &error)
                : window_->export_png(options_.export_png, options_.export_size, std::nullopt, &error));
  if (!options_.export_csv.isEmpty())
    check(sweep ? window_->export_sweep_csv(options_.export_csv, &error) : window_->export_csv(options_.export_csv, &error));
  if (!options_.export_json.isEmpty()) check(window_->export_sweep_json(options_.export_json, &error));
  if (!options_.export_step.isEmpty()) check(window_->export_step_png(options_.export_step, options_.step_size, &error));
  if (!options_.export_insight.isEmpty())
    check(window_->export_insight_png(options_.export_insight, options_.export_size, std::nullopt, &error));
  if (!options_.export_predictions.isEmpty())
    check(window_->insight_panel()->export_predictions(options_.export_predictions, &error));
  if (!options_.screenshot.isEmpty()) {
    if (!window_->grab().save(options_.screenshot, "PNG")) {
      spdlog::error("could not write the screenshot {}", options_.screenshot.toStdString());
      code = kExitExportFailed;
    }
  }
  if (options_.quit) QTimer::singleShot(0, qApp, [code] { QCoreApplication::exit(code); });
}

}  // namespace mb

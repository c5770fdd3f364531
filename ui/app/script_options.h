// Scripted use (slides, automation): what `mirrorbench --run ... --quit` asks the window to do.
#pragma once
#include <QSize>
#include <QString>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/train_config.h"
#include "experiment/plans.h"
#include "sweep/sweep_panel.h"

namespace mb {

struct ScriptOptions {
  bool start = false;                // --run / --compare / --reference / --sweep
  PlanKind kind = PlanKind::Single;
  // --sweep's --batches, --models, --links or --remedies (the axis) and --target; empty lists and a zero
  // target: the Sweep tab's.
  std::optional<SweepSettings> sweep;
  TrainConfig given;                 // the training options of the command line ...
  std::vector<std::string> given_keys;   // ... and which were given (the rest are the panel's)
  std::optional<int> processes;      // > 1: the run under mpirun (--processes), on the hosts of
  std::optional<QString> hostfile;   // --hostfile when given, else this machine only (unset: the panel's)
  QString export_png;                // all charts as one image (--sweep: the sweep's verdict, table, charts)
  QString export_csv;                // the plan's runs (selected when it ends), one row per run x epoch
                                     // (--sweep: the sweep's table, as mirrorbench-cli sweep --csv)
  QString export_json;               // --sweep: the sweep as mirrorbench-cli sweep --json writes it
  QString export_step;               // the classroom view of the last step shown
  QSize step_size{1920, 1080};       // its size (--export-size when given)
  QString screenshot;                // the whole window
  bool calibrate = false;            // measure this machine for the scaling predictor before the plan
  bool show_insight = false;         // show "Where the time goes" (for the screenshot)
  QString export_insight;            // that page as one image (--export-size)
  QString export_predictions;        // the predictions for the run on display: .json, else CSV
  QSize export_size{1600, 1000};
  bool quit = false;                 // exit when done: 0 if every run completed and every export worked
};

// The run a script asks for: the panel's configuration, the reference experiment's preset
// for --reference (experiment/plans.h), then the options the command line gave.
TrainConfig scripted_config(const ScriptOptions& options, const TrainConfig& panel, int processes,
                            const DeviceList& all_devices);

// Exit codes of scripted mode.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 1;      // a run failed, was rejected or stopped (or the calibration)
inline constexpr int kExitUsage = 2;          // bad command line
inline constexpr int kExitExportFailed = 3;   // a PNG/CSV could not be written

}  // namespace mb

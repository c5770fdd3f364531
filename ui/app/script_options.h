// Scripted use (slides, automation): what `mirrorbench --run ... --quit` asks the window to do.
#pragma once
#include <QSize>
#include <QString>

#include "experiment/plans.h"
#include "trainer/train_config.h"

namespace mb {

struct ScriptOptions {
  bool start = false;                // --run / --compare / --reference
  PlanKind kind = PlanKind::Single;
  TrainConfig config;                // the panel's configuration with the command line's overrides
  int processes = 1;                 // > 1: the run under mpirun (--processes), on the hosts of
  QString hostfile;                  // --hostfile when given, else this machine only
  QString export_png;                // all charts as one image
  QString export_csv;                // the plan's runs (selected when it ends), one row per run x epoch
  QString screenshot;                // the whole window
  bool calibrate = false;            // measure this machine for the scaling predictor before the plan
  bool show_insight = false;         // show "Where the time goes" (for the screenshot)
  QString export_insight;            // that page as one image (--export-size)
  QString export_predictions;        // the predictions for the run on display: .json, else CSV
  QSize export_size{1600, 1000};
  bool quit = false;                 // exit when done: 0 if every run completed and every export worked
};

// Exit codes of scripted mode.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 1;      // a run failed, was rejected or stopped (or the calibration)
inline constexpr int kExitUsage = 2;          // bad command line
inline constexpr int kExitExportFailed = 3;   // a PNG/CSV could not be written

}  // namespace mb

// Scripted mode: drives the real window through one plan (or none), then writes the PNG,
// CSV and screenshot asked for and, with --quit, exits with the status of scripted mode.
#pragma once
#include <QObject>

#include "app/script_options.h"

namespace mb {

class MainWindow;

class ScriptRunner : public QObject {
  Q_OBJECT
 public:
  ScriptRunner(MainWindow* window, ScriptOptions options);   // a child of the window

  // Once the event loop runs: starts the plan, or (nothing to run) writes the outputs.
  void start();

 private:
  void start_plan();
  void finish(bool ok);
  void write_outputs(bool ok);

  MainWindow* window_;
  ScriptOptions options_;
  TrainConfig config_;   // the panel's, the preset, the command line's options
  int processes_ = 1;
  QString hostfile_;
  bool finished_ = false;
};

}  // namespace mb

// What the workbench remembers between launches (QSettings): the last run configuration and
// process count, recent data folders, window geometry, chart choices, log level, export size.
#pragma once
#include <QByteArray>
#include <QSize>
#include <QStringList>

#include <memory>

#include "charts/chart_content.h"
#include "config/train_config.h"
#include "sweep/sweep_panel.h"

class QSettings;

namespace mb {

class Settings {
 public:
  // Where common/settings_file.h says: an INI file in $MIRRORBENCH_HOME when set (tests never
  // touch the user's settings), else the platform's native settings for "mirrorbench".
  Settings();
  ~Settings();

  bool has_last_config() const;               // false on the first launch
  TrainConfig last_config() const;
  void set_last_config(const TrainConfig& config);
  int last_processes() const;                 // 1: in the workbench's own process
  QString last_hostfile() const;
  void set_last_launch(int processes, const QString& hostfile);
  QStringList recent_data_dirs() const;
  void set_recent_data_dirs(const QStringList& dirs);

  QByteArray window_geometry() const;
  QByteArray window_state() const;              // splitters
  void set_window(const QByteArray& geometry, const QByteArray& state);

  ChartOptions chart_options() const;
  void set_chart_options(const ChartOptions& options);
  int log_level() const;
  void set_log_level(int level);
  QSize export_size() const;
  void set_export_size(const QSize& size);
  // The Sweep tab's axis, lists and target accuracy; a list that no longer reads comes back
  // empty (the tab keeps its default), as does a target of 0.
  SweepSettings sweep() const;
  void set_sweep(const SweepSettings& sweep);

  void sync();

 private:
  std::unique_ptr<QSettings> s_;
};

}  // namespace mb

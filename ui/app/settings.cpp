// QSettings-backed preferences.
#include "app/settings.h"

#include <QSettings>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "common/settings_file.h"
#include "config/train_options.h"
#include "util/error.h"

namespace mb {

Settings::Settings() : s_(open_settings()) {}

Settings::~Settings() = default;

bool Settings::has_last_config() const { return s_->contains("run/devices"); }

// The options the table marks as remembered, under run/<key>, as the table writes them (the
// keys and words the workbench has always stored). A value that no longer reads (edited by
// hand, or from a version with other ranges) keeps the default.
TrainConfig Settings::last_config() const {
  TrainConfig c;   // the defaults: the reference experiment's settings on one CPU replica
  for (const TrainOption& o : train_options()) {
    const QString key = QStringLiteral("run/%1").arg(QString::fromUtf8(o.key.data(), qsizetype(o.key.size())));
    if (!o.remembered || !s_->contains(key)) continue;
    try {
      set_option(o, c, s_->value(key).toString().toStdString());
    } catch (const Error& e) {
      spdlog::warn("Settings: {} ignored ({})", key.toStdString(), e.what());
    }
  }
  return c;
}

void Settings::set_last_config(const TrainConfig& c) {
  for (const TrainOption& o : train_options())
    if (o.remembered)
      s_->setValue(QStringLiteral("run/%1").arg(QString::fromUtf8(o.key.data(), qsizetype(o.key.size()))),
                   QString::fromStdString(option_text(o, c)));
}

int Settings::last_processes() const { return std::max(1, s_->value("run/processes", 1).toInt()); }
QString Settings::last_hostfile() const { return s_->value("run/hostfile").toString(); }
void Settings::set_last_launch(int processes, const QString& hostfile) {
  s_->setValue("run/processes", processes);
  s_->setValue("run/hostfile", hostfile);
}

QStringList Settings::recent_data_dirs() const { return s_->value("data/recent").toStringList(); }
void Settings::set_recent_data_dirs(const QStringList& dirs) { s_->setValue("data/recent", dirs); }

QByteArray Settings::window_geometry() const { return s_->value("window/geometry").toByteArray(); }
QByteArray Settings::window_state() const { return s_->value("window/state").toByteArray(); }
void Settings::set_window(const QByteArray& geometry, const QByteArray& state) {
  s_->setValue("window/geometry", geometry);
  s_->setValue("window/state", state);
}

ChartOptions Settings::chart_options() const {
  ChartOptions d, o;
  o.show_baseline = s_->value("charts/show_baseline", d.show_baseline).toBool();
  o.show_train = s_->value("charts/show_train", d.show_train).toBool();
  o.zoom_accuracy = s_->value("charts/zoom_accuracy", d.zoom_accuracy).toBool();
  return o;
}

void Settings::set_chart_options(const ChartOptions& o) {
  s_->setValue("charts/show_baseline", o.show_baseline);
  s_->setValue("charts/show_train", o.show_train);
  s_->setValue("charts/zoom_accuracy", o.zoom_accuracy);
}

int Settings::log_level() const { return s_->value("log/level", 2).toInt(); }
void Settings::set_log_level(int level) { s_->setValue("log/level", level); }

QSize Settings::export_size() const { return s_->value("export/size", QSize(1600, 1000)).toSize(); }
void Settings::set_export_size(const QSize& size) { s_->setValue("export/size", size); }

SweepSettings Settings::sweep() const {
  SweepSettings out;
  const QString axis = s_->value("sweep/axis").toString();
  for (SweepAxis a : {SweepAxis::Batch, SweepAxis::Model, SweepAxis::Link, SweepAxis::Remedy})
    if (axis == QString::fromUtf8(to_string(a))) out.axis = a;
  out.batches = parse_batches(s_->value("sweep/batches").toString(), nullptr);
  out.models = models_or_empty(s_->value("sweep/models").toString());
  out.links = links_or_empty(s_->value("sweep/links").toString());
  out.remedies = remedies_or_empty(s_->value("sweep/remedies").toString());
  out.target = s_->value("sweep/target", 0.0).toDouble();
  return out;
}

void Settings::set_sweep(const SweepSettings& sweep) {
  if (sweep.axis) s_->setValue("sweep/axis", QString::fromUtf8(to_string(*sweep.axis)));
  if (!sweep.batches.empty()) s_->setValue("sweep/batches", batches_text(sweep.batches));
  if (!sweep.models.empty()) s_->setValue("sweep/models", QString::fromStdString(sweep_models_text(sweep.models)));
  if (!sweep.links.empty()) s_->setValue("sweep/links", QString::fromStdString(sweep_links_text(sweep.links)));
  if (!sweep.remedies.empty())
    s_->setValue("sweep/remedies", QString::fromStdString(sweep_remedies_text(sweep.remedies)));
  s_->setValue("sweep/target", sweep.target);
}

void Settings::sync() { s_->sync(); }

}  // namespace mb

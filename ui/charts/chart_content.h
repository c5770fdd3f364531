// What each chart shows, computed from the runs on display: series (points, pens, names,
// per-point tooltips), axis ranges and titles. Pure data, so the on-screen charts and the
// PNG export are drawn from the same description.
#pragma once
#include <QList>
#include <QPen>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <vector>

#include "charts/shown_run.h"

namespace mb {

enum class ChartKind { EpochTime, Accuracy, Loss };
inline constexpr ChartKind kAllCharts[] = {ChartKind::EpochTime, ChartKind::Accuracy, ChartKind::Loss};
QString chart_name(ChartKind kind);   // "epoch-time", "accuracy", "loss" (file names, ids)

struct ChartOptions {
  bool show_baseline = true;
  bool show_train = true;          // train curves beside validation curves
  bool zoom_accuracy = true;       // accuracy axis fitted to the data instead of 0-100 %
};

struct SeriesSpec {
  QString id;                      // "<run id>/<metric>", stable across updates
  QString name;                    // legend text
  QPen pen;
  bool markers = true;
  bool line = true;                // false: points only (a scatter of measurements)
  double marker_size = 7;
  bool in_legend = true;
  QList<QPointF> points;
  QStringList tips;                // one tooltip per point (may be empty for traces)
};

struct ChartContent {
  ChartKind kind = ChartKind::EpochTime;
  QString title;                   // may contain simple HTML (a coloured headline)
  QString x_title, y_title;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double x_tick_anchor = 0, x_tick_interval = 1;
  double y_tick_interval = 0.2;    // ticks at y_min + k * interval (y_min is a multiple of it)
  QString y_format = "%.1f";
  std::vector<SeriesSpec> series;
};

ChartContent build_chart(ChartKind kind, const std::vector<ShownRun>& runs, const ChartOptions& options);

// Axis helpers for other charts built the same way (insight/): a step of 1, 2, 2.5 or 5 times
// a power of ten giving at most `ticks` intervals over `span`; the decimals that print every
// multiple of it; and the y range fitted to the series (from zero, or padded), whole ticks.
double nice_step(double span, int ticks);
int decimals_for(double step);
void fit_y_axis(ChartContent& content, bool from_zero);

}  // namespace mb

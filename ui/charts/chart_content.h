// What each chart shows, computed from the runs on display: series (points, pens, names,
// per-point tooltips), axis ranges and titles. Pure data, so the on-screen charts and the
// PNG export are drawn from the same description.
#pragma once
#include <QList>
#include <QPen>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <limits>
#include <vector>

#include "charts/chart_legend.h"
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
  QString name;                    // the run's full name and what it shows (tooltips)
  QPen pen;
  bool markers = true;
  bool line = true;                // false: points only (a scatter of measurements)
  double marker_size = 7;
  bool in_legend = true;           // series_legend() gives it an entry
  QList<QPointF> points;
  QStringList tips;                // one tooltip per point (may be empty for traces)
};

// The axes' ticks are the finest the content wants: the renderer coarsens them (charts/
// chart_render.h) until every tick label has room, never cutting or dropping one.
struct ChartContent {
  ChartKind kind = ChartKind::EpochTime;
  QString title;                   // may contain simple HTML (a coloured headline)
  QString x_title, y_title;        // short (a unit): the title above says what is measured
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double x_tick_anchor = 0, x_tick_interval = 1;
  double y_tick_interval = 0.2;    // ticks at y_min + k * interval (y_min is a multiple of it)
  // How far coarser ticks may push the y range's ends out (a whole tick each): not below zero
  // for times and losses, not beyond 0-100 % for accuracy.
  double y_floor = -std::numeric_limits<double>::infinity(), y_ceil = std::numeric_limits<double>::infinity();
  std::vector<SeriesSpec> series;
  // One entry per run (its short name, its full name as the tooltip and in exports), then the
  // key to the line styles where several series of a run share its colour.
  std::vector<LegendItem> legend;
};

ChartContent build_chart(ChartKind kind, const std::vector<ShownRun>& runs, const ChartOptions& options);

// Axis helpers for other charts built the same way (insight/): a step of 1, 2, 2.5 or 5 times
// a power of ten giving at most `ticks` intervals over `span`; the decimals that print every
// multiple of it; and the y range fitted to the series (from zero, or padded), whole ticks.
double nice_step(double span, int ticks);
// The next such step above `step` (`whole`: 1, 2 or 5 times a power of ten, for counts).
double coarser_step(double step, bool whole = false);
int decimals_for(double step);
void fit_y_axis(ChartContent& content, bool from_zero);
// A legend entry for each series with in_legend, named by the series' name (charts whose
// series names are already short: the predictor's).
std::vector<LegendItem> series_legend(const ChartContent& content);

}  // namespace mb

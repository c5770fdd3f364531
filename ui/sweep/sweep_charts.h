// The sweep's three bar charts. Over the batch sizes, one bar per learning-rate rule: time per
// epoch, validation accuracy, and time to reach the target accuracy (no bar: not reached).
// Over the models or the links, one bar per replica count: time per epoch, speed-up over one
// replica, validation accuracy. The best configuration's bar is drawn in green. Built from
// the same description on screen and in the PNG export.
#pragma once
#include <QColor>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <array>
#include <limits>
#include <vector>

#include "charts/chart_legend.h"
#include "sweep/sweep_progress.h"

class QChart;
class QPainter;

namespace mb {

enum class SweepChart { EpochTime, Accuracy, TimeToTarget, SpeedUp };
inline constexpr int kSweepChartViews = 3;
// The charts a sweep along `axis` shows, left to right.
std::array<SweepChart, kSweepChartViews> sweep_charts(SweepAxis axis);
QString sweep_chart_name(SweepChart kind);   // "sweep-epoch-time", ... (object names, files)

struct SweepBarSet {
  QString label;                      // "lr fixed", "2 replicas": the legend
  QString full;                       // what it means: the legend's tooltip, an export's legend
  QColor colour;
  std::vector<double> values;         // per category; 0: no bar (not run yet, not reached)
  std::vector<QString> tips;
};

struct SweepBars {
  QString title, y_title, x_title;
  QStringList categories;             // the batch sizes, models or links
  std::vector<SweepBarSet> sets;
  int best_set = -1, best_category = -1;   // the best configuration's bar
  double y_max = 1;                   // the axis reaches at least this (a whole tick above it)
  double y_ceil = std::numeric_limits<double>::infinity();   // and never beyond this (100 %)
};
SweepBars sweep_bars(SweepChart kind, const SweepProgress& progress);

inline const QColor kFixedLrColour{0x15, 0x65, 0xc0};
inline const QColor kScaledLrColour{0xef, 0x6c, 0x00};
inline const QColor kBestColour{0x2e, 0x7d, 0x32};
// One replica, then two, three ... (model and link sweeps).
QColor replicas_colour(int replicas);
// A link as a chart's category (Gbit/s): "1", "own" (this machine's exchange).
std::string short_link_name(const SimulatedLink& link);

// Makes `chart` show the bars (its series and axes are rebuilt); the legend (ours, charts/
// chart_legend.h) with `names`.
void fill_sweep_chart(QChart* chart, const SweepBars& bars, LegendNames names = LegendNames::Short);
// Draws the bars as a chart of exactly target.size() into `painter` (export: full names).
void render_sweep_chart(const SweepBars& bars, QPainter& painter, const QRectF& target);

}  // namespace mb

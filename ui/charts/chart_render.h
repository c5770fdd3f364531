// Turns a ChartContent into Qt Charts objects: updates a live QChart in place (same series
// -> series->replace(points), no flicker) or draws a fresh chart into any QPainter (export).
#pragma once
#include <QRectF>

#include <functional>
#include <limits>

#include "charts/chart_content.h"
#include "charts/chart_legend.h"

class QChart;
class QPainter;
class QValueAxis;

namespace mb {

// Styles a new chart (theme, our legend, no animation) and gives it the two value axes.
void init_chart(QChart* chart);

// Makes `chart` show `content`. Series whose ids match are updated with replace(); otherwise
// the series are rebuilt. Each series' objectName is its SeriesSpec::id, and hovering a
// series shows the nearest point's tooltip. The legend shows `names` (charts/chart_legend.h).
void apply_content(QChart* chart, const ChartContent& content, LegendNames names = LegendNames::Short);

// A value axis whose ticks follow its length: from `lo` to `hi` at steps of at least `step`
// (1, 2, 2.5 or 5 times a power of ten), coarser where the axis is too short for every label to
// have room, the ends pushed out to whole ticks but never past `floor` and `ceil`; every tick
// within the range is labelled (Qt Charts would hide a label that overlaps its neighbour and cut
// one taller than its share: an axis reading 0.0, 0.1, 0.2, 0.3, 0.5). `anchored`: the range
// stays and the ticks start at `lo` (whole epochs, replicas), only their step grows. The chart
// fits the ticks again whenever its plot area changes.
struct AxisSpec {
  double lo = 0, hi = 1, step = 0.2;
  double floor = -std::numeric_limits<double>::infinity(), ceil = std::numeric_limits<double>::infinity();
  bool anchored = false;
  double anchor = 0;               // anchored: the first tick
  int decimals = -1;               // labels' decimals; < 0: those of the step
};
void set_axis(QChart* chart, QValueAxis* axis, const AxisSpec& spec);
// Fits every value axis of `chart` set by set_axis to its plot area now (the exports lay out
// once and render, with no event loop to do it later).
void fit_axes(QChart* chart);

// Draws a fresh chart of exactly target.size() (logical pixels) into `painter`, after `fill`
// has given it its series and axes: the one off-screen chart renderer of every export. It
// reports what it laid out (charts/laid_out_text.h).
void render_chart_offscreen(const std::function<void(QChart*)>& fill, QPainter& painter, const QRectF& target);

// Draws `content` as a chart of exactly target.size() (logical pixels) into `painter`, its
// legend with the runs' full names.
void render_content(const ChartContent& content, QPainter& painter, const QRectF& target);

}  // namespace mb

// Turns a ChartContent into Qt Charts objects: updates a live QChart in place (same series
// -> series->replace(points), no flicker) or draws a fresh chart into any QPainter (export).
#pragma once
#include <QRectF>

#include <functional>

#include "charts/chart_content.h"

class QChart;
class QPainter;

namespace mb {

// Styles a new chart (theme, legend, no animation) and gives it the two value axes.
void init_chart(QChart* chart);

// Makes `chart` show `content`. Series whose ids match are updated with replace(); otherwise
// the series are rebuilt. Each series' objectName is its SeriesSpec::id, and hovering a
// series shows the nearest point's tooltip.
void apply_content(QChart* chart, const ChartContent& content);

// Draws a fresh chart of exactly target.size() (logical pixels) into `painter`, after `fill`
// has given it its series and axes: the one off-screen chart renderer of every export.
void render_chart_offscreen(const std::function<void(QChart*)>& fill, QPainter& painter, const QRectF& target);

// Draws `content` as a chart of exactly target.size() (logical pixels) into `painter`.
void render_content(const ChartContent& content, QPainter& painter, const QRectF& target);

}  // namespace mb

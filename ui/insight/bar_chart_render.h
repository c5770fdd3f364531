// Draws a BarChartContent into any QPainter (the window's views and the PNG export), and
// finds the segment under a point for tooltips: one layout for both, so what is hovered is
// what is drawn.
#pragma once
#include <QPointF>
#include <QRectF>
#include <QString>

#include <vector>

#include "insight/bar_chart.h"

class QPainter;

namespace mb {

struct BarChartLayout {
  QRectF plot;                          // the bars' area, inside the axes
  struct Placed {
    QRectF rect;
    std::size_t group = 0, bar = 0, segment = 0;
  };
  std::vector<Placed> segments;         // in drawing order
  std::vector<QRectF> bars;             // every bar's whole extent, groups in order
};

// Lengths are logical pixels; the fonts are sized in pixels too, so an export at any size
// looks like the window (the exporter scales the painter).
BarChartLayout layout_bar_chart(const BarChartContent& content, const QRectF& target);
void paint_bar_chart(const BarChartContent& content, QPainter& painter, const QRectF& target);
// The tooltip of the segment at `at` (empty: none there).
QString bar_chart_tip(const BarChartContent& content, const QRectF& target, QPointF at);

}  // namespace mb

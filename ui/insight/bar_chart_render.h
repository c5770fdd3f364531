// Draws a BarChartContent into any QPainter (the window's views and the PNG export), and
// finds the segment under a point for tooltips: one layout for both, so what is hovered is
// what is drawn. The layout places every text too, whole: titles and the legend wrap, the value
// axis takes as many round ticks as its length has room for, and a text that still cannot fit
// is marked as cut (charts/laid_out_text.h), never silently shortened.
#pragma once
#include <QColor>
#include <QFont>
#include <QPointF>
#include <QRectF>
#include <QString>

#include <vector>

#include "charts/chart_legend.h"
#include "charts/laid_out_text.h"
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
  // The value axis as drawn: the content's ticks, coarser where the plot is too short for all.
  double value_max = 1, value_tick = 0.2;
  int value_decimals = 1;
  struct Text {
    QString text;
    QRectF box;                         // where it is drawn (a vertical text: before turning it)
    int flags = 0;                      // Qt::Alignment and Qt::TextWordWrap
    QFont font;
    QColor colour;
    bool vertical = false;              // turned a quarter left, centred on the box
    LaidOutText said;                   // what it is and whether it had to be cut or left out
  };
  std::vector<Text> texts;
  std::vector<LegendItem> legend_items;
  LegendLayout legend;
  QPointF legend_at;                    // the legend's top left
};

// Lengths are logical pixels; the fonts are sized in pixels too, so an export at any size
// looks like the window (the exporter scales the painter).
BarChartLayout layout_bar_chart(const BarChartContent& content, const QRectF& target);
// Draws the chart and reports its texts (report_laid_out: an export's recorder hears them).
void paint_bar_chart(const BarChartContent& content, QPainter& painter, const QRectF& target);
// Every text of the chart at `target`, as laid out.
std::vector<LaidOutText> laid_out_texts(const BarChartContent& content, const QRectF& target);
// The tooltip of the segment at `at` (empty: none there).
QString bar_chart_tip(const BarChartContent& content, const QRectF& target, QPointF at);

}  // namespace mb

// The bar charts of "Where the time goes" as pure data: stacked bars per replica per epoch
// (the breakdown) and one row of phases laid end to end per replica (the timeline). Built
// from the runs on display (insight/breakdown.h), drawn by insight/bar_chart_render.h on the
// screen and into the PNG export alike, and what the tests read the numbers from.
#pragma once
#include <QColor>
#include <QString>

#include <vector>

namespace mb {

struct BarSegment {
  double start = 0;     // along the value axis: the sum of the segments below (stacked) or before it
  double length = 0;    // seconds
  QColor colour;
  QString name;         // "compute", "all-reduce", ...
  QString tip;          // tooltip (simple HTML)
};

struct Bar {
  QString label;        // "r0", "replica 1"
  bool marked = false;  // the simulated straggler: its label is drawn bold
  std::vector<BarSegment> segments;
  double end() const { return segments.empty() ? 0.0 : segments.back().start + segments.back().length; }
};

struct BarGroup {
  QString label;        // "epoch 3", "baseline"
  bool partial = false; // the epoch in progress: drawn lighter
  std::vector<Bar> bars;
};

struct LegendEntry {
  QString name;
  QColor colour;
};

// A labelled line across the plot at a value (the timeline's step boundaries).
struct ValueMark {
  double at = 0;
  QString label;
};

struct BarChartContent {
  QString id;                   // "breakdown", "timeline"
  bool rows = false;            // false: vertical bars in groups; true: one horizontal row per bar
  QString title;                // plain text, bold
  QString headline;             // plain text under the title
  QColor headline_colour = QColor(0x44, 0x44, 0x44);
  QString value_title;          // "Time (s)", "Time (ms)"
  double value_scale = 1;       // axis labels show value * scale (seconds -> ms)
  double value_max = 1;         // axis from 0 to here (a whole number of ticks)
  double value_tick = 0.2;
  int value_decimals = 1;
  std::vector<BarGroup> groups;
  std::vector<ValueMark> marks;
  std::vector<LegendEntry> legend;
  QString empty_text;           // not empty: said in place of the bars (nothing honest to draw)
};

}  // namespace mb

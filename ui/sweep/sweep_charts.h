// The sweep's three bar charts over the batch sizes, one bar per learning-rate rule: time per
// epoch, validation accuracy, and time to reach the target accuracy (no bar: not reached).
// The best configuration's bar is drawn in green. Built from the same description on screen
// and in the PNG export.
#pragma once
#include <QColor>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <vector>

#include "sweep/sweep_progress.h"

class QChart;
class QPainter;

namespace mb {

enum class SweepChart { EpochTime, Accuracy, TimeToTarget };
inline constexpr SweepChart kSweepCharts[] = {SweepChart::EpochTime, SweepChart::Accuracy, SweepChart::TimeToTarget};
QString sweep_chart_name(SweepChart kind);   // "sweep-epoch-time", ... (object names, files)

struct SweepBars {
  QString title, y_title;
  QStringList categories;             // the batch sizes
  std::vector<double> fixed, scaled;  // per category; 0: no bar (not run yet, not reached)
  std::vector<QString> fixed_tips, scaled_tips;
  int best_category = -1;             // the best configuration's bar ...
  bool best_scaled = false;           // ... in this set
  double y_max = 1;
};
SweepBars sweep_bars(SweepChart kind, const SweepProgress& progress);

inline const QColor kFixedLrColour{0x15, 0x65, 0xc0};
inline const QColor kScaledLrColour{0xef, 0x6c, 0x00};
inline const QColor kBestColour{0x2e, 0x7d, 0x32};

// Makes `chart` show the bars (its series and axes are rebuilt).
void fill_sweep_chart(QChart* chart, const SweepBars& bars);
// Draws the bars as a chart of exactly target.size() into `painter` (export).
void render_sweep_chart(const SweepBars& bars, QPainter& painter, const QRectF& target);

}  // namespace mb

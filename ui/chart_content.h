// What each chart shows, computed from the runs on display: series (points, pens, names,
// per-point tooltips), axis ranges and titles. Pure data, so the on-screen charts and the
// PNG export are drawn from the same description.
#pragma once
#include <QColor>
#include <QList>
#include <QPen>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

#include "baseline.h"
#include "records/run_record.h"

namespace mb {

enum class ChartKind { EpochTime, Accuracy, Loss };
inline constexpr ChartKind kAllCharts[] = {ChartKind::EpochTime, ChartKind::Accuracy, ChartKind::Loss};
QString chart_name(ChartKind kind);   // "epoch-time", "accuracy", "loss" (file names, ids)

// A running trace that never holds more than kMaxPoints: when it fills up, every other point
// is dropped and from then on only every 2nd (4th, ...) new point is kept, so however long
// the run, the points stay evenly spread, the newest is kept, and a redraw stays cheap.
class RunningTrace {
 public:
  static constexpr qsizetype kMaxPoints = 2000;
  void append(QPointF p);
  const QList<QPointF>& points() const { return points_; }

 private:
  QList<QPointF> points_;
  int stride_ = 1;    // one point kept per stride_ appended
  int skipped_ = 0;   // appended since the last kept point
};

// One run on the charts. The live run carries the epochs finished so far plus running
// train loss/accuracy traces at fractional epochs (epoch e runs from x = e-1 to x = e).
struct ShownRun {
  RunRecord record;
  QString label;
  QColor colour;
  bool baseline = false;           // drawn dashed, in grey
  bool live = false;
  RunningTrace loss_trace, acc_trace;
  std::optional<EpochTimeComparison> vs_baseline;   // for non-baseline runs with a baseline
  QString baseline_label;
};

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

// How a run's settings differ from the classic task's (ClassicTask), e.g. {"1 epoch",
// "2,048 training images"}; empty when the run is the classic task.
QStringList classic_task_differences(const RunConfig& config);

// The comparison card beside the charts: primary run against its baseline, and the
// classic task's two criteria with the measured numbers. Simple HTML for QLabel/QTextDocument.
QString comparison_summary_html(const std::vector<ShownRun>& runs);

// Distinct, colour-blind-friendly colours for runs; greys for baselines.
QColor run_colour(int index);
QColor baseline_colour(int index);

}  // namespace mb

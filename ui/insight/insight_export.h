// The exports of "Where the time goes": its charts as a PNG (all four on one page, or one),
// the breakdown's numbers as CSV, the predictions as CSV or JSON, and a run's Chrome trace.
#pragma once
#include <QImage>
#include <QSize>
#include <QString>

#include <optional>
#include <string>
#include <vector>

#include "charts/chart_content.h"
#include "experiment/run_store.h"
#include "insight/bar_chart.h"
#include "insight/prediction.h"

namespace mb {

enum class InsightChart { Breakdown, Timeline, Prediction };
inline constexpr InsightChart kInsightCharts[] = {InsightChart::Breakdown, InsightChart::Timeline, InsightChart::Prediction};
QString insight_chart_name(InsightChart chart);   // "breakdown", "timeline", "prediction" (file names)

// What the page shows, as the window builds it: the time per epoch beside the breakdown, the
// timeline beside the prediction.
struct InsightContents {
  ChartContent epoch_time;
  BarChartContent breakdown, timeline;
  ChartContent prediction;
};

// One chart at `size`, or (nullopt) the whole page under `title`, as the window draws them.
QImage render_insight_image(const InsightContents& contents, std::optional<InsightChart> chart, const QString& title,
                            QSize size);

// One row per epoch and replica: run_id, devices, epoch, replica, simulated_straggler,
// forward_s, backward_s, allreduce_s, optimizer_s, wait_s, compute_s, total_s, epoch_time_s,
// then every time category added since (compute_cpu_s, ...: util/phase_times.h).
std::string breakdown_csv(const RunRecord& record);

// The predictions for `scope`: CSV (predictions_csv), or JSON (the calibration, the scope and
// the predictions) when `file` ends in .json. False with *error (naming the file) on failure.
bool save_predictions(const MachineCalibration& calibration, const PredictionScope& scope, const QString& file,
                      QString* error);
bool save_text(const std::string& text, const QString& file, QString* error);
// Copies the run's kept trace (RunStore::trace_file_for) to `file`.
bool export_trace(const RunStore& store, const std::string& id, const QString& file, QString* error);

}  // namespace mb

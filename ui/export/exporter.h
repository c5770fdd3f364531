// Export for slides and spreadsheets: one chart or all charts (with the comparison card) as
// a PNG of exactly the requested pixel size, and the runs' per-epoch data as CSV.
#pragma once
#include <QImage>
#include <QSize>
#include <QString>

#include <optional>
#include <span>
#include <vector>

#include "charts/chart_content.h"
#include "records/run_record.h"

namespace mb {

QImage render_chart_image(const ChartContent& content, QSize size);
// Title line on top, then a 2 x 2 grid: time per epoch, accuracy, loss, comparison card.
QImage render_overview_image(const std::vector<ChartContent>& charts, const QString& summary_html,
                             const QString& title, QSize size);

// What Export PNG writes: one chart, or (nullopt) all of them with the comparison card under
// a title naming the data set, the primary run, its baseline and the date.
QImage render_charts_image(const std::vector<ShownRun>& runs, const ChartOptions& options,
                           std::optional<ChartKind> chart, QSize size);

// Write PNG/CSV; false with *error (naming the file) on failure.
bool save_png(const QImage& image, const QString& file, QString* error);
bool save_runs_csv(std::span<const RunRecord> runs, const QString& file, QString* error);

// "1600x1000" -> QSize; invalid (empty) for anything else or sides outside 64..16384.
QSize parse_size(const QString& text);

}  // namespace mb

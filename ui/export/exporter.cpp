// PNG and CSV export.
#include "export/exporter.h"

#include <QObject>
#include <QRegularExpression>

#include <algorithm>

#include "charts/chart_render.h"
#include "charts/comparison_card.h"
#include "common/format.h"
#include "export/export_page.h"

namespace mb {

QImage render_chart_image(const ChartContent& content, QSize size) {
  ExportPage page(size, QSize(900, 600));
  render_content(content, page.painter(), page.area());
  return page.finish();
}

QImage render_overview_image(const std::vector<ChartContent>& charts, const QString& summary_html,
                             const QString& title, QSize size) {
  ExportPage page(size, QSize(1600, 1000));
  const auto cells = page.title_and_grid(title);
  for (std::size_t i = 0; i < charts.size() && i < 3; ++i) render_content(charts[i], page.painter(), cells[i]);
  page.card(cells[3].adjusted(6, 6, -6, -6), summary_html);
  return page.finish();
}

QImage render_charts_image(const std::vector<ShownRun>& runs, const ChartOptions& options,
                           std::optional<ChartKind> chart, QSize size) {
  if (chart) return render_chart_image(build_chart(*chart, runs, options), size);
  std::vector<ChartContent> contents;
  for (ChartKind kind : kAllCharts) contents.push_back(build_chart(kind, runs, options));
  QString title = QObject::tr("mirrorbench");
  if (!runs.empty()) {
    // The runs' full names: a slide has no legend's tooltips to say what "2 replicas" ran.
    const ShownRun& first = runs.front();
    const RunConfig& c = first.record.config;
    title += QStringLiteral(" · %1 · %2").arg(QString::fromStdString(c.dataset), run_label(first.record));
    if (const ShownRun* b = baseline_of(runs, first)) title += QObject::tr(" vs %1").arg(run_label(b->record));
    title += QStringLiteral(" · %1").arg(format_date(c.start_time).left(10));
  }
  return render_overview_image(contents, comparison_summary_html(runs), title, size);
}

bool save_png(const QImage& image, const QString& file, QString* error) {
  if (image.isNull() || !image.save(file, "PNG")) {
    if (error) *error = QObject::tr("could not write the PNG file %1").arg(file);
    return false;
  }
  return true;
}

bool save_runs_csv(std::span<const RunRecord> runs, const QString& file, QString* error) {
  try {
    write_runs_csv(runs, file.toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
}

QSize parse_size(const QString& text) {
  static const QRegularExpression re(QStringLiteral("^\\s*(\\d+)\\s*[xX×]\\s*(\\d+)\\s*$"));
  const auto m = re.match(text);
  if (!m.hasMatch()) return {};
  const int w = m.captured(1).toInt(), h = m.captured(2).toInt();
  if (w < 64 || h < 64 || w > 16384 || h > 16384) return {};
  return QSize(w, h);
}

}  // namespace mb

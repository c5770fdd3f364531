// PNG and CSV export.
#include "export/exporter.h"

#include <QObject>
#include <QPainter>
#include <QRegularExpression>
#include <QTextDocument>

#include <algorithm>

#include "charts/chart_render.h"
#include "charts/comparison_card.h"
#include "common/format.h"

namespace mb {

namespace {

// Charts are laid out at a "logical" size and scaled up to the pixels asked for, so text and
// lines keep their proportions on a 4K slide instead of turning into specks.
double layout_scale(QSize size, QSize reference) {
  return std::max(1.0, std::min(double(size.width()) / reference.width(), double(size.height()) / reference.height()));
}

QImage blank(QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  return image;
}

}  // namespace

QImage render_chart_image(const ChartContent& content, QSize size) {
  QImage image = blank(size);
  QPainter painter(&image);
  const double scale = layout_scale(size, QSize(900, 600));
  painter.scale(scale, scale);
  render_content(content, painter, QRectF(0, 0, size.width() / scale, size.height() / scale));
  return image;
}

QImage render_overview_image(const std::vector<ChartContent>& charts, const QString& summary_html,
                             const QString& title, QSize size) {
  QImage image = blank(size);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  const double scale = layout_scale(size, QSize(1600, 1000));
  painter.scale(scale, scale);
  const double w = size.width() / scale, h = size.height() / scale;

  const double title_h = 36;
  QFont title_font = painter.font();
  title_font.setPointSizeF(14);
  title_font.setBold(true);
  painter.setFont(title_font);
  painter.setPen(QColor(0x22, 0x22, 0x22));
  painter.drawText(QRectF(12, 0, w - 24, title_h), Qt::AlignVCenter | Qt::AlignLeft, title);

  const double cell_w = w / 2, cell_h = (h - title_h) / 2;
  auto cell = [&](int i) { return QRectF((i % 2) * cell_w, title_h + (i / 2) * cell_h, cell_w, cell_h); };
  for (std::size_t i = 0; i < charts.size() && i < 3; ++i) {
    const QRectF r = cell(int(i)).adjusted(4, 4, -4, -4);
    render_content(charts[i], painter, r);
  }

  const QRectF card = cell(3).adjusted(10, 10, -10, -10);
  painter.setPen(QPen(QColor(0xd0, 0xd0, 0xd0), 1));
  painter.setBrush(Qt::white);
  painter.drawRect(card);
  QTextDocument doc;
  doc.setDocumentMargin(14);
  doc.setHtml(summary_html);
  doc.setTextWidth(card.width());
  painter.save();
  painter.translate(card.topLeft());
  doc.drawContents(&painter, QRectF(0, 0, card.width(), card.height()));
  painter.restore();
  return image;
}

QImage render_charts_image(const std::vector<ShownRun>& runs, const ChartOptions& options,
                           std::optional<ChartKind> chart, QSize size) {
  if (chart) return render_chart_image(build_chart(*chart, runs, options), size);
  std::vector<ChartContent> contents;
  for (ChartKind kind : kAllCharts) contents.push_back(build_chart(kind, runs, options));
  QString title = QObject::tr("mirrorbench");
  if (!runs.empty()) {
    const RunConfig& c = runs.front().record.config;
    title += QStringLiteral(" · %1 · %2").arg(QString::fromStdString(c.dataset), runs.front().label);
    if (!runs.front().baseline_label.isEmpty()) title += QObject::tr(" vs %1").arg(runs.front().baseline_label);
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

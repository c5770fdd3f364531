// Sweep exports (see sweep_export.h).
#include "sweep/sweep_export.h"

#include <QObject>
#include <QPainter>
#include <QTextDocument>

#include <nlohmann/json.hpp>

#include "common/format.h"
#include "sweep/sweep_charts.h"
#include "sweep/sweep_table_model.h"
#include "util/atomic_file.h"

namespace mb {

namespace {

bool write_text(const std::string& text, const QString& file, QString* error) {
  try {
    write_file_atomic(file.toStdString(), text);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = QObject::tr("could not write %1: %2").arg(file, QString::fromStdString(e.what()));
    return false;
  }
}

}  // namespace

QString sweep_headline(const SweepProgress& progress) {
  if (progress.empty()) return QObject::tr("No sweep yet");
  const SweepSummary s = progress.summary();
  if (s.best < 0) return progress.running() ? QObject::tr("The sweep is running: the first configuration is training")
                                            : QString::fromStdString(s.verdict);
  const QString verdict = QString::fromStdString(s.verdict);
  return progress.running() ? QObject::tr("So far: %1").arg(verdict) : verdict;
}

QString sweep_table_html(const SweepProgress& progress) {
  SweepTableModel model;
  model.set_progress(progress);
  const std::vector<int> columns = SweepTableModel::columns_for(progress.options().axis);
  QString html = QStringLiteral("<table cellspacing='0' cellpadding='5' style='font-size:11pt' width='100%'><tr>");
  for (const int c : columns)
    html += QStringLiteral("<th align='%1' style='border-bottom:1px solid #888'>%2</th>")
                .arg(SweepTableModel::left_aligned(c) ? "left" : "right",
                     model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString().toHtmlEscaped());
  html += "</tr>";
  const auto rows = progress.rows();
  for (int r = 0; r < model.rowCount(); ++r) {
    const bool best = rows[std::size_t(r)].best;
    html += best ? QStringLiteral("<tr style='background-color:#c8e6c9; font-weight:bold'>") : QStringLiteral("<tr>");
    for (const int c : columns)
      html += QStringLiteral("<td align='%1'>%2</td>")
                  .arg(SweepTableModel::left_aligned(c) ? "left" : "right", model.text(r, c).toHtmlEscaped());
    html += "</tr>";
  }
  return html + "</table>";
}

QImage render_sweep_image(const SweepProgress& progress, QSize size) {
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter painter(&image);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  // Laid out at 1600 x 1000 logical pixels and scaled, as the chart export does.
  const double scale = std::max(0.4, std::min(size.width() / 1600.0, size.height() / 1000.0));
  painter.scale(scale, scale);
  const double w = size.width() / scale, h = size.height() / scale;

  const SweepOptions& o = progress.options();
  const QString what = o.axis == SweepAxis::Batch   ? QObject::tr("batch-size sweep")
                       : o.axis == SweepAxis::Model  ? QObject::tr("model sweep (what-if)")
                       : o.axis == SweepAxis::Remedy ? QObject::tr("remedy sweep (communication)")
                                                     : QObject::tr("link sweep (simulated links)");
  QString title = QObject::tr("mirrorbench · %1").arg(what);
  if (!progress.records().empty()) {
    const RunConfig& c = progress.records().front().config;
    title += QStringLiteral(" · %1 · %2 · %3 · %4")
                 .arg(QString::fromStdString(c.dataset),
                      o.axis == SweepAxis::Batch ? devices_text(c)
                                                 : QObject::tr("1 to %1 of %2")
                                                       .arg(o.base.devices.size())
                                                       .arg(QString::fromStdString(format_devices(o.base.devices))),
                      o.base.epochs == 1 ? QObject::tr("1 epoch") : QObject::tr("%1 epochs").arg(o.base.epochs), format_date(c.start_time).left(10));
  }
  QFont f = painter.font();
  f.setPointSizeF(14);
  f.setBold(true);
  painter.setFont(f);
  painter.setPen(QColor(0x22, 0x22, 0x22));
  painter.drawText(QRectF(16, 4, w - 32, 36), Qt::AlignVCenter | Qt::AlignLeft, title);

  const SweepSummary s = progress.summary();
  f.setPointSizeF(16);
  painter.setFont(f);
  painter.setPen(s.best >= 0 ? QColor(0x1b, 0x5e, 0x20) : QColor(0x33, 0x33, 0x33));
  painter.drawText(QRectF(16, 42, w - 32, 56), Qt::AlignVCenter | Qt::AlignLeft | Qt::TextWordWrap, sweep_headline(progress));

  QTextDocument doc;
  doc.setDocumentMargin(4);
  doc.setHtml(sweep_table_html(progress));
  doc.setTextWidth(w - 32);
  const double table_h = std::min(doc.size().height(), h * 0.45);
  painter.save();
  painter.translate(16, 104);
  doc.drawContents(&painter, QRectF(0, 0, w - 32, table_h));
  painter.restore();

  const double top = 104 + table_h + 12, chart_w = (w - 32) / 3;
  const auto kinds = sweep_charts(o.axis);
  for (int i = 0; i < kSweepChartViews; ++i)
    render_sweep_chart(sweep_bars(kinds[std::size_t(i)], progress), painter,
                       QRectF(16 + i * chart_w, top, chart_w - 8, h - top - 10));
  return image;
}

bool save_sweep_csv(const SweepProgress& progress, const QString& file, QString* error) {
  return write_text(sweep_csv(progress.summary()), file, error);
}

bool save_sweep_json(const SweepProgress& progress, const QString& file, QString* error) {
  return write_text(to_json(progress.summary()).dump(2) + "\n", file, error);
}

}  // namespace mb

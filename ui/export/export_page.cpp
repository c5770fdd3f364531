// The export page (see export_page.h).
#include "export/export_page.h"

#include <QFontMetricsF>
#include <QTextDocument>

#include <algorithm>

#include "charts/laid_out_text.h"

namespace mb {

namespace {

QImage white_image(QSize pixels) {
  QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  return image;
}

// Scaled up to fill the pixels, never down, unless the pixels are smaller than half the layout
// in a direction: then laid out at that half and scaled down, so that a small export keeps its
// text whole (smaller) rather than cut into a chart too small to hold it.
double layout_scale(QSize pixels, QSize logical) {
  const double up = std::min(double(pixels.width()) / logical.width(), double(pixels.height()) / logical.height());
  const double down = std::min(2.0 * pixels.width() / logical.width(), 2.0 * pixels.height() / logical.height());
  return std::max(1.0, up) * std::min(1.0, down);
}

}  // namespace

ExportPage::ExportPage(QSize pixels, QSize logical) : image_(white_image(pixels)), painter_(&image_) {
  painter_.setRenderHint(QPainter::Antialiasing);
  painter_.setRenderHint(QPainter::TextAntialiasing);
  const double scale = layout_scale(pixels, logical);
  painter_.scale(scale, scale);
  area_ = QRectF(0, 0, pixels.width() / scale, pixels.height() / scale);
}

std::array<QRectF, 4> ExportPage::title_and_grid(const QString& title, double inset) {
  const double w = area_.width();
  QFont title_font = painter_.font();
  title_font.setPixelSize(19);
  title_font.setBold(true);
  // A long title (two runs' full names) takes a second line rather than run off the page.
  const QFontMetricsF fm(title_font);
  const QRectF need = fm.boundingRect(QRectF(0, 0, w - 24, 1e6), Qt::TextWordWrap, title);
  const double title_h = std::max(36.0, need.height() + 12);
  painter_.save();
  painter_.setFont(title_font);
  painter_.setPen(QColor(0x22, 0x22, 0x22));
  painter_.drawText(QRectF(12, 0, w - 24, title_h), Qt::AlignVCenter | Qt::AlignLeft | Qt::TextWordWrap, title);
  painter_.restore();
  report_laid_out({{title, QStringLiteral("page title"), need.width() > w - 24 + 0.5}});
  const double cell_w = w / 2, cell_h = (area_.height() - title_h) / 2;
  std::array<QRectF, 4> cells;
  for (int i = 0; i < 4; ++i)
    cells[std::size_t(i)] =
        QRectF((i % 2) * cell_w, title_h + (i / 2) * cell_h, cell_w, cell_h).adjusted(inset, inset, -inset, -inset);
  return cells;
}

void ExportPage::card(const QRectF& where, const QString& html) {
  painter_.save();
  painter_.setPen(QPen(QColor(0xd0, 0xd0, 0xd0), 1));
  painter_.setBrush(Qt::white);
  painter_.drawRect(where);
  QTextDocument doc;
  doc.setDocumentMargin(14);
  doc.setHtml(html);
  doc.setTextWidth(where.width());
  painter_.translate(where.topLeft());
  doc.drawContents(&painter_, QRectF(0, 0, where.width(), where.height()));
  painter_.restore();
}

QImage ExportPage::finish() {
  painter_.end();
  return image_;
}

}  // namespace mb

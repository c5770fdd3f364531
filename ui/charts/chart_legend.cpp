// The charts' legend (see chart_legend.h).
#include "charts/chart_legend.h"

#include <QChart>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGraphicsSceneHoverEvent>
#include <QLegend>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace mb {

namespace {

constexpr double kLineSample = 26;   // long enough for a dash, a gap and a dash of a baseline
constexpr double kSampleGap = 4;     // between a sample and its words
constexpr double kEntryGap = 14;     // between two entries of a row
constexpr double kRowGap = 2;

QString words_of(const LegendItem& item, LegendNames names) {
  return names == LegendNames::Full && !item.full.isEmpty() ? item.full : item.text;
}

double sample_width(const LegendItem& item, const QFontMetricsF& fm) {
  return item.sample == LegendItem::Sample::Line ? kLineSample : fm.height() * 0.7;
}

}  // namespace

LegendLayout layout_legend(const std::vector<LegendItem>& items, LegendNames names, const QFont& font, double width) {
  const QFontMetricsF fm(font);
  const double line_h = fm.height();
  LegendLayout out;
  // Each entry's size: on one line where it fits in a row, else its words wrapped to the row.
  struct Sized {
    double sample_w, text_w, text_h, words_w;
  };
  std::vector<Sized> sized;
  for (const LegendItem& item : items) {
    const QString words = words_of(item, names);
    const double sw = sample_width(item, fm);
    double tw = fm.horizontalAdvance(words), th = line_h, ww = tw;
    if (sw + kSampleGap + tw > width) {
      tw = std::max(1.0, width - sw - kSampleGap);
      const QRectF wrapped = fm.boundingRect(QRectF(0, 0, tw, 1e6), Qt::TextWordWrap, words);
      th = wrapped.height();
      ww = wrapped.width();
    }
    sized.push_back({sw, tw, th, ww});
    out.entries.push_back({{}, {}, words, ww});
  }
  // Rows: entries in order while they fit, each row centred.
  double y = 0;
  std::size_t first = 0;
  while (first < items.size()) {
    std::size_t end = first;
    double row_w = 0, row_h = 0;
    while (end < items.size()) {
      const double w = sized[end].sample_w + kSampleGap + sized[end].text_w;
      const double with = row_w + (end > first ? kEntryGap : 0) + w;
      if (end > first && with > width) break;
      row_w = with;
      row_h = std::max(row_h, sized[end].text_h);
      ++end;
    }
    double x = std::max(0.0, (width - row_w) / 2);
    for (std::size_t i = first; i < end; ++i) {
      const Sized& s = sized[i];
      LegendLayout::Placed& p = out.entries[i];
      const double sample_h = items[i].sample == LegendItem::Sample::Line ? line_h : fm.height() * 0.7;
      p.sample = QRectF(x, y + (line_h - sample_h) / 2, s.sample_w, sample_h);
      p.text = QRectF(x + s.sample_w + kSampleGap, y, s.text_w, s.text_h);
      x += s.sample_w + kSampleGap + s.text_w + kEntryGap;
    }
    y += row_h + kRowGap;
    first = end;
  }
  out.height = items.empty() ? 0 : y - kRowGap;
  return out;
}

void paint_legend(QPainter& painter, const std::vector<LegendItem>& items, const LegendLayout& layout, const QFont& font,
                  QPointF origin, const QColor& text_colour) {
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing);
  painter.translate(origin);
  painter.setFont(font);
  for (std::size_t i = 0; i < items.size() && i < layout.entries.size(); ++i) {
    const LegendItem& item = items[i];
    const LegendLayout::Placed& p = layout.entries[i];
    if (item.sample == LegendItem::Sample::Box) {
      painter.fillRect(p.sample, item.pen.color());
    } else {
      QPen pen = item.pen;
      pen.setCapStyle(Qt::FlatCap);   // the dashes as the chart draws them, not rounded into dots
      painter.setPen(pen);
      const double y = p.sample.center().y();
      painter.drawLine(QPointF(p.sample.left(), y), QPointF(p.sample.right(), y));
      if (item.marker > 0) {
        painter.setPen(Qt::NoPen);
        painter.setBrush(item.pen.color());
        const double r = std::min(item.marker, p.sample.height()) / 2;
        painter.drawEllipse(QPointF(p.sample.center().x(), y), r, r);
        painter.setBrush(Qt::NoBrush);
      }
    }
    painter.setPen(text_colour);
    const bool wrapped = p.text.height() > QFontMetricsF(font).height() + 0.5;
    painter.drawText(p.text, Qt::AlignLeft | Qt::AlignTop | (wrapped ? Qt::TextWordWrap : 0), p.words);
  }
  painter.restore();
}

// ---- the legend of a QChart ------------------------------------------------------------------

ChartLegend::ChartLegend(QChart* chart) : QGraphicsObject(chart), chart_(chart), base_margins_(chart->margins()) {
  font_ = chart->legend()->font();
  setAcceptHoverEvents(true);
  setZValue(10);   // above the chart's background
  // A new width wraps the entries anew, and the plot above makes room for their rows.
  connect(chart, &QGraphicsWidget::geometryChanged, this, &ChartLegend::relayout);
}

ChartLegend* ChartLegend::set(QChart* chart, std::vector<LegendItem> items, LegendNames names) {
  ChartLegend* legend = find(chart);
  if (!legend) {
    chart->legend()->hide();
    legend = new ChartLegend(chart);   // owned by the chart, as its child item
  }
  legend->items_ = std::move(items);
  legend->names_ = names;
  legend->relayout();
  return legend;
}

ChartLegend* ChartLegend::find(const QChart* chart) {
  for (QGraphicsItem* child : chart->childItems())
    if (auto* legend = dynamic_cast<ChartLegend*>(child)) return legend;
  return nullptr;
}

const ChartLegend* ChartLegend::of(const QChart* chart) { return find(chart); }

void ChartLegend::relayout() {
  // Inside the chart's background, which its layout insets by its contents margins.
  qreal left = 0, top = 0, right = 0, bottom = 0;
  if (chart_->layout()) chart_->layout()->getContentsMargins(&left, &top, &right, &bottom);
  const QSizeF size = chart_->size();
  const double width = std::max(40.0, size.width() - left - right - base_margins_.left() - base_margins_.right() - 8);
  prepareGeometryChange();
  width_ = width;
  layout_ = layout_legend(items_, names_, font_, width);
  const double height = items_.empty() ? 0 : std::ceil(layout_.height) + 6;
  QMargins margins = base_margins_;
  margins.setBottom(base_margins_.bottom() + int(height));
  if (chart_->margins() != margins) chart_->setMargins(margins);
  setPos(left + base_margins_.left() + 4, size.height() - bottom - base_margins_.bottom() - height + 3);
  update();
}

QRectF ChartLegend::boundingRect() const { return QRectF(0, 0, width_, layout_.height); }

void ChartLegend::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  paint_legend(*painter, items_, layout_, font_, QPointF(0, 0));
}

void ChartLegend::hoverMoveEvent(QGraphicsSceneHoverEvent* event) {
  QString tip;
  for (std::size_t i = 0; i < items_.size() && i < layout_.entries.size(); ++i) {
    const auto& p = layout_.entries[i];
    if (p.sample.united(p.text).adjusted(-2, -2, 2, 2).contains(event->pos()))
      tip = items_[i].full.isEmpty() ? items_[i].text : items_[i].full;
  }
  if (tip != toolTip()) setToolTip(tip);
}

}  // namespace mb

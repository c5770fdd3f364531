// Painting the breakdown and the timeline (see bar_chart_render.h), in the look of the Qt
// Charts beside them: light grid, small grey axis labels, bold title, legend at the bottom.
#include "insight/bar_chart_render.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

namespace mb {

namespace {

// Point sizes as the charts use them, turned into pixels at 96 dpi: a QImage's own dpi would
// otherwise shrink the text of an export.
QFont px_font(double points, bool bold = false) {
  QFont f;
  f.setPixelSize(std::max(6, int(std::lround(points * 96.0 / 72.0))));
  f.setBold(bold);
  return f;
}

struct Fonts {
  QFont title = px_font(11, true), headline = px_font(10), axis = px_font(8.5), axis_title = px_font(9),
        legend = px_font(8.5), bold_axis = px_font(8.5, true);
};

const QColor kGrid(0xe3, 0xe3, 0xe3);
const QColor kAxisText(0x55, 0x55, 0x55);
const QColor kTitleText(0x22, 0x22, 0x22);

QString tick_label(const BarChartContent& c, double v) { return QString::number(v * c.value_scale, 'f', c.value_decimals); }

// The axis' tick values: 0, tick, 2 tick, ... value_max (counted, not summed, so no rounding drift).
std::vector<double> ticks(const BarChartContent& c) {
  std::vector<double> out;
  if (!(c.value_tick > 0) || !(c.value_max > 0)) return out;
  const int n = std::min(100, int(std::floor(c.value_max / c.value_tick + 1e-6)));
  for (int i = 0; i <= n; ++i) out.push_back(i * c.value_tick);
  return out;
}

struct Frame {
  QRectF title, headline, plot, legend;
  double bar_label_h = 0, group_label_h = 0, mark_label_h = 0;
};

std::vector<const Bar*> all_bars(const BarChartContent& c) {
  std::vector<const Bar*> out;
  for (const auto& g : c.groups)
    for (const auto& b : g.bars) out.push_back(&b);
  return out;
}

Frame frame(const BarChartContent& c, const QRectF& r, const Fonts& f) {
  Frame fr;
  const double m = 6;
  const QFontMetricsF title(f.title), head(f.headline), axis(f.axis), legend(f.legend), axis_title(f.axis_title);
  double y = r.top() + m;
  fr.title = QRectF(r.left() + m, y, r.width() - 2 * m, title.height());
  y += title.height() + 1;
  // The headline wraps (up to three lines) rather than lose its end.
  const double head_w = r.width() - 2 * m;
  const double head_h = c.headline.isEmpty() ? 0
                        : std::min(3 * head.lineSpacing(),
                                   head.boundingRect(QRectF(0, 0, head_w, 1e6), Qt::TextWordWrap, c.headline).height());
  fr.headline = QRectF(r.left() + m, y, head_w, head_h);
  y += fr.headline.height() + 6;
  const double legend_h = c.legend.empty() || !c.empty_text.isEmpty() ? 0 : legend.height() + 6;
  fr.legend = QRectF(r.left() + m, r.bottom() - m - legend_h, r.width() - 2 * m, legend_h);
  double bottom = fr.legend.top() - 2;
  double left = r.left() + m;
  if (!c.rows) {
    double label_w = 0;
    for (double v : ticks(c)) label_w = std::max(label_w, axis.horizontalAdvance(tick_label(c, v)));
    left += axis_title.height() + 4 + label_w + 4;
    fr.bar_label_h = axis.height() + 1;
    fr.group_label_h = axis.height() + 2;
    bottom -= fr.bar_label_h + fr.group_label_h;
  } else {
    double label_w = 0;
    for (const Bar* b : all_bars(c)) label_w = std::max(label_w, QFontMetricsF(b->marked ? f.bold_axis : f.axis).horizontalAdvance(b->label));
    left += label_w + 8;
    bottom -= axis.height() + 2 + axis_title.height() + 2;
    if (!c.marks.empty()) {
      fr.mark_label_h = axis.height() + 2;
      y += fr.mark_label_h;
    }
  }
  const double right = r.right() - m - (c.rows ? axis.horizontalAdvance(tick_label(c, c.value_max)) / 2 : 4);
  fr.plot = QRectF(QPointF(left, y), QPointF(std::max(left + 10, right), std::max(y + 10, bottom)));
  return fr;
}

}  // namespace

BarChartLayout layout_bar_chart(const BarChartContent& c, const QRectF& target) {
  const Fonts f;
  const Frame fr = frame(c, target, f);
  BarChartLayout out;
  out.plot = fr.plot;
  if (!c.empty_text.isEmpty() || c.value_max <= 0) return out;
  const QRectF& p = fr.plot;
  const double scale_max = c.value_max;
  if (!c.rows) {
    const std::size_t groups = c.groups.size();
    if (groups == 0) return out;
    const double group_w = p.width() / double(groups);
    for (std::size_t g = 0; g < groups; ++g) {
      const auto& bars = c.groups[g].bars;
      const double inner = group_w * 0.8;
      const double left = p.left() + g * group_w + (group_w - inner) / 2;
      const double slot = bars.empty() ? inner : inner / double(bars.size());
      const double bar_w = std::min(slot * 0.82, 64.0);
      for (std::size_t b = 0; b < bars.size(); ++b) {
        const double x = left + b * slot + (slot - bar_w) / 2;
        const double top = p.bottom() - std::min(1.0, bars[b].end() / scale_max) * p.height();
        out.bars.push_back(QRectF(QPointF(x, top), QPointF(x + bar_w, p.bottom())));
        for (std::size_t s = 0; s < bars[b].segments.size(); ++s) {
          const BarSegment& seg = bars[b].segments[s];
          const double y0 = p.bottom() - std::min(1.0, seg.start / scale_max) * p.height();
          const double y1 = p.bottom() - std::min(1.0, (seg.start + seg.length) / scale_max) * p.height();
          out.segments.push_back({QRectF(QPointF(x, y1), QPointF(x + bar_w, y0)), g, b, s});
        }
      }
    }
  } else {
    std::vector<std::pair<std::size_t, std::size_t>> rows;
    for (std::size_t g = 0; g < c.groups.size(); ++g)
      for (std::size_t b = 0; b < c.groups[g].bars.size(); ++b) rows.emplace_back(g, b);
    if (rows.empty()) return out;
    const double row_h = p.height() / double(rows.size());
    const double thick = std::min(row_h * 0.62, 30.0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto [g, b] = rows[i];
      const Bar& bar = c.groups[g].bars[b];
      const double y = p.top() + i * row_h + (row_h - thick) / 2;
      auto x_of = [&](double v) { return p.left() + std::clamp(v / scale_max, 0.0, 1.0) * p.width(); };
      out.bars.push_back(QRectF(QPointF(p.left(), y), QPointF(x_of(bar.end()), y + thick)));
      for (std::size_t s = 0; s < bar.segments.size(); ++s) {
        const BarSegment& seg = bar.segments[s];
        out.segments.push_back({QRectF(QPointF(x_of(seg.start), y), QPointF(x_of(seg.start + seg.length), y + thick)), g, b, s});
      }
    }
  }
  return out;
}

namespace {

// The value axis: grid lines with their tick labels, the axis line and its title.
void paint_axes(const BarChartContent& c, QPainter& painter, const QRectF& target, const Frame& fr, const Fonts& f) {
  const QRectF& p = fr.plot;
  const QFontMetricsF axis(f.axis);
  painter.setFont(f.axis);
  for (double v : ticks(c)) {
    painter.setPen(QPen(kGrid, 1));
    if (!c.rows) {
      const double y = p.bottom() - v / c.value_max * p.height();
      painter.drawLine(QPointF(p.left(), y), QPointF(p.right(), y));
      painter.setPen(kAxisText);
      painter.drawText(QRectF(target.left(), y - axis.height() / 2, p.left() - target.left() - 4, axis.height()),
                       Qt::AlignRight | Qt::AlignVCenter, tick_label(c, v));
    } else {
      const double x = p.left() + v / c.value_max * p.width();
      painter.drawLine(QPointF(x, p.top()), QPointF(x, p.bottom()));
      painter.setPen(kAxisText);
      painter.drawText(QRectF(x - 40, p.bottom() + 2, 80, axis.height()), Qt::AlignHCenter | Qt::AlignTop, tick_label(c, v));
    }
  }
  painter.setPen(QPen(QColor(0xb0, 0xb0, 0xb0), 1));
  if (!c.rows) painter.drawLine(p.bottomLeft(), p.bottomRight());
  else painter.drawLine(p.topLeft(), p.bottomLeft());

  // The value axis' title.
  painter.setFont(f.axis_title);
  painter.setPen(kAxisText);
  const QFontMetricsF axis_title(f.axis_title);
  if (!c.rows) {
    painter.save();
    painter.translate(target.left() + 6 + axis_title.height() / 2, p.center().y());
    painter.rotate(-90);
    painter.drawText(QRectF(-p.height() / 2, -axis_title.height() / 2, p.height(), axis_title.height()), Qt::AlignCenter,
                     c.value_title);
    painter.restore();
  } else {
    painter.drawText(QRectF(p.left(), p.bottom() + axis.height() + 3, p.width(), axis_title.height()), Qt::AlignCenter,
                     c.value_title);
  }
}

// The segments, then the bars' and the groups' labels.
void paint_bars(const BarChartContent& c, QPainter& painter, const QRectF& target, const Frame& fr, const Fonts& f,
                const BarChartLayout& layout) {
  const QRectF& p = fr.plot;
  for (const auto& placed : layout.segments) {
    const BarGroup& group = c.groups[placed.group];
    const BarSegment& seg = group.bars[placed.bar].segments[placed.segment];
    QColor fill = seg.colour;
    if (group.partial) fill.setAlpha(140);
    painter.fillRect(placed.rect, fill);
  }
  painter.setBrush(Qt::NoBrush);
  std::size_t k = 0;
  painter.setFont(f.axis);
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const BarGroup& group = c.groups[g];
    double group_left = 1e300, group_right = -1e300;
    for (std::size_t b = 0; b < group.bars.size() && k < layout.bars.size(); ++b, ++k) {
      const QRectF bar = layout.bars[k];
      const Bar& spec = group.bars[b];
      group_left = std::min(group_left, bar.left());
      group_right = std::max(group_right, bar.right());
      if (group.partial) {   // the epoch in progress: a dashed outline around what is there so far
        painter.setPen(QPen(QColor(0x77, 0x77, 0x77), 1, Qt::DashLine));
        painter.drawRect(bar);
      }
      const QFont& label_font = spec.marked ? f.bold_axis : f.axis;
      const QFontMetricsF lm(label_font);
      painter.setFont(label_font);
      painter.setPen(spec.marked ? QColor(0xb7, 0x1c, 0x1c) : kAxisText);
      if (!c.rows) {
        if (lm.horizontalAdvance(spec.label) <= bar.width() + 14)
          painter.drawText(QRectF(bar.center().x() - 40, p.bottom() + 1, 80, fr.bar_label_h), Qt::AlignHCenter | Qt::AlignTop,
                           spec.label);
      } else {
        painter.drawText(QRectF(target.left() + 2, bar.top() - 4, p.left() - target.left() - 8, bar.height() + 8),
                         Qt::AlignRight | Qt::AlignVCenter, spec.label);
      }
    }
    if (!c.rows && group_right > group_left) {
      painter.setFont(group.partial ? f.axis : f.bold_axis);
      painter.setPen(kTitleText);
      const double w = std::max(group_right - group_left + 20, p.width() / double(c.groups.size()));
      painter.drawText(QRectF((group_left + group_right) / 2 - w / 2, p.bottom() + fr.bar_label_h, w, fr.group_label_h),
                       Qt::AlignHCenter | Qt::AlignTop,
                       QFontMetricsF(painter.font()).elidedText(group.label, Qt::ElideRight, w));
    }
  }
}

// The marks (the timeline's step boundaries), above the bars.
void paint_marks(const BarChartContent& c, QPainter& painter, const Frame& fr, const Fonts& f) {
  const QRectF& p = fr.plot;
  painter.setFont(f.axis);
  for (const ValueMark& m : c.marks) {
    if (m.at < 0 || m.at > c.value_max) continue;
    const double x = p.left() + m.at / c.value_max * p.width();
    painter.setPen(QPen(QColor(0x70, 0x70, 0x70), 1, Qt::DotLine));
    painter.drawLine(QPointF(x, p.top() - 2), QPointF(x, p.bottom()));
    painter.setPen(kAxisText);
    painter.drawText(QRectF(x + 2, p.top() - fr.mark_label_h - 1, 120, fr.mark_label_h), Qt::AlignLeft | Qt::AlignBottom, m.label);
  }
}

// The legend: colour squares and names, centred.
void paint_legend(const BarChartContent& c, QPainter& painter, const Frame& fr, const Fonts& f) {
  if (fr.legend.height() > 0) {
    const QFontMetricsF lm(f.legend);
    const double box = lm.height() * 0.7, gap = 14;
    double width = 0;
    for (const auto& e : c.legend) width += box + 4 + lm.horizontalAdvance(e.name) + gap;
    double x = fr.legend.center().x() - (width - gap) / 2;
    painter.setFont(f.legend);
    for (const auto& e : c.legend) {
      const double cy = fr.legend.center().y();
      painter.fillRect(QRectF(x, cy - box / 2, box, box), e.colour);
      x += box + 4;
      painter.setPen(kTitleText);
      painter.drawText(QRectF(x, fr.legend.top(), lm.horizontalAdvance(e.name) + 2, fr.legend.height()), Qt::AlignLeft | Qt::AlignVCenter,
                       e.name);
      x += lm.horizontalAdvance(e.name) + gap;
    }
  }
}

}  // namespace

void paint_bar_chart(const BarChartContent& c, QPainter& painter, const QRectF& target) {
  const Fonts f;
  const Frame fr = frame(c, target, f);
  const BarChartLayout layout = layout_bar_chart(c, target);
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  painter.fillRect(target, Qt::white);

  painter.setPen(kTitleText);
  painter.setFont(f.title);
  painter.drawText(fr.title, Qt::AlignHCenter | Qt::AlignVCenter,
                   QFontMetricsF(f.title).elidedText(c.title, Qt::ElideRight, fr.title.width()));
  if (!c.headline.isEmpty()) {
    painter.setPen(c.headline_colour);
    painter.setFont(f.headline);
    painter.drawText(fr.headline, Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextWordWrap, c.headline);
  }
  const QRectF& p = fr.plot;
  if (!c.empty_text.isEmpty()) {
    painter.setPen(QColor(0x66, 0x66, 0x66));
    painter.setFont(f.headline);
    painter.drawText(p.adjusted(12, 8, -12, -8), Qt::AlignCenter | Qt::TextWordWrap, c.empty_text);
    painter.restore();
    return;
  }

  paint_axes(c, painter, target, fr, f);
  paint_bars(c, painter, target, fr, f, layout);
  paint_marks(c, painter, fr, f);
  paint_legend(c, painter, fr, f);
  painter.restore();
}

QString bar_chart_tip(const BarChartContent& c, const QRectF& target, QPointF at) {
  const BarChartLayout layout = layout_bar_chart(c, target);
  const BarChartLayout::Placed* best = nullptr;
  double best_d = 4;   // pixels: thin segments (a short optimizer step) stay reachable
  for (const auto& placed : layout.segments) {
    const QRectF& r = placed.rect;
    const double dx = std::max({r.left() - at.x(), 0.0, at.x() - r.right()});
    const double dy = std::max({r.top() - at.y(), 0.0, at.y() - r.bottom()});
    const double d = std::hypot(dx, dy);
    if (d < best_d) {
      best_d = d;
      best = &placed;
    }
  }
  if (!best) return {};
  return c.groups[best->group].bars[best->bar].segments[best->segment].tip;
}

}  // namespace mb

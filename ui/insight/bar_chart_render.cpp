// Painting the breakdown and the timeline (see bar_chart_render.h), in the look of the Qt
// Charts beside them: light grid, small grey axis labels, bold title, legend at the bottom.
#include "insight/bar_chart_render.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "charts/chart_content.h"

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
constexpr double kMargin = 6;

// What the layout works out beside the layout itself: the rows of text under the bars.
struct Frame {
  double bar_label_h = 0, group_label_h = 0, mark_label_h = 0;
  int group_lines = 1;                  // the groups' labels on one line, or broken at " · " onto two
  std::vector<int> mark_rows;           // per mark within the axis: its label's row above the plot (0: lowest)
};

constexpr int kMaxMarkRows = 3;

// The marks within the axis: their x on the plot.
std::vector<double> mark_xs(const BarChartContent& c, const BarChartLayout& l) {
  std::vector<double> xs;
  for (const ValueMark& m : c.marks)
    if (m.at >= 0 && m.at <= l.value_max) xs.push_back(l.plot.left() + m.at / l.value_max * l.plot.width());
  return xs;
}

// Each mark's label in the lowest row where it clears the label before it in that row: close
// marks (a short step) stack their labels instead of writing them over each other.
std::vector<int> mark_rows(const BarChartContent& c, const BarChartLayout& l, const QFontMetricsF& fm) {
  const std::vector<double> xs = mark_xs(c, l);
  std::vector<int> rows;
  double row_end[kMaxMarkRows];
  std::fill(std::begin(row_end), std::end(row_end), -1e300);
  std::size_t i = 0;
  for (const ValueMark& m : c.marks) {
    if (m.at < 0 || m.at > l.value_max) continue;
    const double x = xs[i++] + 2;
    int row = 0;
    while (row < kMaxMarkRows - 1 && row_end[row] > x - 4) ++row;
    row_end[row] = x + fm.horizontalAdvance(m.label);
    rows.push_back(row);
  }
  return rows;
}

QString tick_label(const BarChartLayout& l, double scale, double v) { return QString::number(v * scale, 'f', l.value_decimals); }

// The axis' tick values: 0, tick, 2 tick, ... value_max (counted, not summed, so no rounding drift).
std::vector<double> ticks(const BarChartLayout& l) {
  std::vector<double> out;
  if (!(l.value_tick > 0) || !(l.value_max > 0)) return out;
  const int n = std::min(100, int(std::floor(l.value_max / l.value_tick + 1e-6)));
  for (int i = 0; i <= n; ++i) out.push_back(i * l.value_tick);
  return out;
}

// The content's ticks, coarser (round steps still) until every label has room along an axis
// `length` long: an axis never reads 0.0, 0.1, 0.2, 0.3, 0.5, its labels never overlap.
void fit_value_axis(BarChartLayout& l, const BarChartContent& c, double length, bool vertical, const QFontMetricsF& fm) {
  const double scale = c.value_scale;
  double step = c.value_tick * scale;
  const double top = c.value_max * scale;
  for (int tries = 0; tries < 40 && step > 0; ++tries) {
    l.value_tick = step / scale;
    l.value_max = std::ceil(top / step - 1e-9) * step / scale;
    l.value_decimals = decimals_for(step);
    const double n = std::round(l.value_max / l.value_tick);
    const double label = vertical ? fm.height() + 4
                                  : std::max(fm.horizontalAdvance(tick_label(l, scale, 0)),
                                             fm.horizontalAdvance(tick_label(l, scale, l.value_max))) + 8;
    if (n <= 2 || (n + 1) * label <= length) return;
    step = coarser_step(step);
  }
}

void add_text(BarChartLayout& l, const QString& text, const QRectF& box, int flags, const QFont& font, const QColor& colour,
              const QString& where, bool cut, bool vertical = false) {
  l.texts.push_back({text, box, flags, font, colour, vertical, {text, where, cut}});
}

double wrapped_height(const QFontMetricsF& fm, double width, const QString& text) {
  return fm.boundingRect(QRectF(0, 0, std::max(1.0, width), 1e6), Qt::TextWordWrap, text).height();
}

// The title (up to two lines) and the headline (up to three) at the top; returns the y below them.
double place_titles(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f) {
  const double w = r.width() - 2 * kMargin;
  double y = r.top() + kMargin;
  const QFontMetricsF title(f.title), head(f.headline);
  const double title_need = wrapped_height(title, w, c.title);
  const double title_h = std::min(2 * title.lineSpacing(), title_need);
  add_text(l, c.title, QRectF(r.left() + kMargin, y, w, title_h), Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextWordWrap,
           f.title, kTitleText, QStringLiteral("title"), title_need > title_h + 0.5);
  y += title_h + 1;
  if (!c.headline.isEmpty()) {
    const double need = wrapped_height(head, w, c.headline);
    const double h = std::min(3 * head.lineSpacing(), need);
    add_text(l, c.headline, QRectF(r.left() + kMargin, y, w, h), Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextWordWrap,
             f.headline, c.headline_colour, QStringLiteral("headline"), need > h + 0.5);
    y += h;
  }
  return y + 6;
}

// The legend at the bottom, in as many rows as it needs; returns the y above it.
double place_legend(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f) {
  const double bottom = r.bottom() - kMargin;
  if (c.legend.empty() || !c.empty_text.isEmpty()) return bottom;
  for (const LegendEntry& e : c.legend) l.legend_items.push_back({e.name, {}, LegendItem::Sample::Box, QPen(e.colour), 0});
  l.legend = layout_legend(l.legend_items, LegendNames::Short, f.legend, r.width() - 2 * kMargin);
  const double h = l.legend.height + 6;
  l.legend_at = QPointF(r.left() + kMargin, bottom - h + 3);
  return bottom - h;
}

// Vertical bars: the value axis on the left, bar and group labels under the plot. The groups'
// labels break onto a second line when one of them is wider than its group.
Frame frame_columns(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f, double top, double bottom) {
  Frame fr;
  const QFontMetricsF axis(f.axis), bold(f.bold_axis), axis_title(f.axis_title);
  for (int lines = 1; lines <= 2; ++lines) {
    fr.group_lines = lines;
    fr.bar_label_h = axis.height() + 1;
    fr.group_label_h = lines * axis.height() + 2;
    const double plot_bottom = std::max(top + 10, bottom - 2 - fr.bar_label_h - fr.group_label_h);
    fit_value_axis(l, c, plot_bottom - top, true, axis);
    double label_w = 0;
    for (double v : ticks(l)) label_w = std::max(label_w, axis.horizontalAdvance(tick_label(l, c.value_scale, v)));
    const double left = r.left() + kMargin + axis_title.height() + 4 + label_w + 4;
    l.plot = QRectF(QPointF(left, top), QPointF(std::max(left + 10, r.right() - kMargin - 4), plot_bottom));
    const double room = c.groups.empty() ? l.plot.width() : l.plot.width() / double(c.groups.size());
    const bool fit = std::all_of(c.groups.begin(), c.groups.end(), [&](const BarGroup& g) {
      return QFontMetricsF(g.partial ? f.axis : f.bold_axis).horizontalAdvance(g.label) <= room;
    });
    if (fit) break;
  }
  return fr;
}

// Horizontal rows: the bars' labels on the left, the value axis under the plot, the marks'
// labels above it.
Frame frame_rows(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f, double top, double bottom) {
  Frame fr;
  const QFontMetricsF axis(f.axis), axis_title(f.axis_title);
  double label_w = 0;
  for (const auto& g : c.groups)
    for (const auto& b : g.bars) label_w = std::max(label_w, QFontMetricsF(b.marked ? f.bold_axis : f.axis).horizontalAdvance(b.label));
  const double left = r.left() + kMargin + label_w + 8;
  bottom -= axis.height() + 2 + axis_title.height() + 2;
  // The last tick's label is centred on the plot's end: half of it lies beyond.
  double right = r.right() - kMargin - axis.horizontalAdvance(QString::number(c.value_max * c.value_scale, 'f', c.value_decimals)) / 2;
  fit_value_axis(l, c, right - left, false, axis);
  right = r.right() - kMargin - axis.horizontalAdvance(tick_label(l, c.value_scale, l.value_max)) / 2;
  l.plot = QRectF(QPointF(left, top), QPointF(std::max(left + 10, right), std::max(top + 10, bottom)));
  if (!c.marks.empty()) {   // the marks' labels above the plot, in as many rows as they need
    fr.mark_rows = mark_rows(c, l, axis);
    const int rows = fr.mark_rows.empty() ? 1 : *std::max_element(fr.mark_rows.begin(), fr.mark_rows.end()) + 1;
    fr.mark_label_h = rows * (axis.height() + 1) + 1;
    l.plot.setTop(std::min(top + fr.mark_label_h, l.plot.bottom() - 10));
  }
  return fr;
}

// The segments and bars, scaled to the fitted axis.
void place_segments(BarChartLayout& out, const BarChartContent& c) {
  const QRectF& p = out.plot;
  const double scale_max = out.value_max;
  if (!c.rows) {
    const std::size_t groups = c.groups.size();
    if (groups == 0) return;
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
    return;
  }
  std::vector<std::pair<std::size_t, std::size_t>> rows;
  for (std::size_t g = 0; g < c.groups.size(); ++g)
    for (std::size_t b = 0; b < c.groups[g].bars.size(); ++b) rows.emplace_back(g, b);
  if (rows.empty()) return;
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

// The value axis' tick labels and its title.
void place_axis_texts(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f) {
  const QRectF& p = l.plot;
  const QFontMetricsF axis(f.axis), axis_title(f.axis_title);
  for (double v : ticks(l)) {
    const QString text = tick_label(l, c.value_scale, v);
    const double w = axis.horizontalAdvance(text);
    if (!c.rows) {
      const double y = p.bottom() - v / l.value_max * p.height();
      const QRectF box(r.left(), y - axis.height() / 2, p.left() - r.left() - 4, axis.height());
      add_text(l, text, box, Qt::AlignRight | Qt::AlignVCenter, f.axis, kAxisText, QStringLiteral("tick label"), w > box.width());
    } else {
      const double x = p.left() + v / l.value_max * p.width();
      const QRectF box(x - w / 2 - 2, p.bottom() + 2, w + 4, axis.height());
      add_text(l, text, box, Qt::AlignHCenter | Qt::AlignTop, f.axis, kAxisText, QStringLiteral("tick label"),
               box.left() < r.left() - 0.5 || box.right() > r.right() + 0.5);
    }
  }
  const double w = axis_title.horizontalAdvance(c.value_title);
  if (!c.rows) {
    const QRectF box(r.left() + kMargin, p.center().y() - p.height() / 2, axis_title.height(), p.height());
    add_text(l, c.value_title, box, Qt::AlignCenter, f.axis_title, kAxisText, QStringLiteral("axis title"), w > p.height(), true);
  } else {
    const QRectF box(p.left(), p.bottom() + axis.height() + 3, p.width(), axis_title.height());
    add_text(l, c.value_title, box, Qt::AlignCenter, f.axis_title, kAxisText, QStringLiteral("axis title"), w > box.width());
  }
}

// The bars' labels (vertical bars: under each bar; a label wider than its bar's slot gives way
// to the bar's number in its group) and the groups' labels under them.
void place_bar_texts(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f, const Frame& fr) {
  const QRectF& p = l.plot;
  std::size_t k = 0;
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const BarGroup& group = c.groups[g];
    const double slot = p.width() / double(std::max<std::size_t>(1, c.groups.size())) * 0.8 /
                        double(std::max<std::size_t>(1, group.bars.size()));
    double group_left = 1e300, group_right = -1e300;
    for (std::size_t b = 0; b < group.bars.size() && k < l.bars.size(); ++b, ++k) {
      const QRectF bar = l.bars[k];
      const Bar& spec = group.bars[b];
      group_left = std::min(group_left, bar.left());
      group_right = std::max(group_right, bar.right());
      const QFont& font = spec.marked ? f.bold_axis : f.axis;
      const QFontMetricsF fm(font);
      const QColor colour = spec.marked ? QColor(0xb7, 0x1c, 0x1c) : kAxisText;
      if (c.rows) {
        const QRectF box(r.left() + 2, bar.top() - 4, p.left() - r.left() - 8, bar.height() + 8);
        add_text(l, spec.label, box, Qt::AlignRight | Qt::AlignVCenter, font, colour, QStringLiteral("bar label"),
                 fm.horizontalAdvance(spec.label) > box.width() + 0.5);
        continue;
      }
      QString text = spec.label;
      if (fm.horizontalAdvance(text) > slot) text = QString::number(b);
      const QRectF box(bar.center().x() - slot / 2, p.bottom() + 1, slot, fr.bar_label_h);
      add_text(l, text, box, Qt::AlignHCenter | Qt::AlignTop, font, colour, QStringLiteral("bar label"),
               fm.horizontalAdvance(text) > slot + 0.5);
    }
    if (c.rows || group_right <= group_left) continue;
    const QFont& font = group.partial ? f.axis : f.bold_axis;
    const QFontMetricsF fm(font);
    const double w = std::max(group_right - group_left + 20, p.width() / double(c.groups.size()));
    QString text = group.label;
    if (fr.group_lines > 1 && fm.horizontalAdvance(text) > w) text.replace(QStringLiteral(" · "), QStringLiteral("\n"));
    const double need = fm.boundingRect(QRectF(0, 0, w, 1e6), Qt::AlignHCenter, text).width();
    add_text(l, text, QRectF((group_left + group_right) / 2 - w / 2, p.bottom() + fr.bar_label_h, w, fr.group_label_h),
             Qt::AlignHCenter | Qt::AlignTop, font, kTitleText, QStringLiteral("group label"), need > w + 0.5);
  }
}

// The marks' labels (the timeline's steps), above the plot in their rows; one that still runs
// into the next in its row, or past the chart's edge, is marked cut.
void place_mark_texts(BarChartLayout& l, const BarChartContent& c, const QRectF& r, const Fonts& f, const Frame& fr) {
  const QRectF& p = l.plot;
  const QFontMetricsF axis(f.axis);
  const std::vector<double> xs = mark_xs(c, l);
  std::vector<double> row_end(kMaxMarkRows, -1e300);
  std::size_t i = 0;
  for (const ValueMark& m : c.marks) {
    if (m.at < 0 || m.at > l.value_max) continue;
    const int row = i < fr.mark_rows.size() ? fr.mark_rows[i] : 0;
    const double x = xs[i++];
    const double line = axis.height() + 1;
    const QRectF box(x + 2, p.top() - 1 - (row + 1) * line, axis.horizontalAdvance(m.label) + 1, line);
    const bool into_other = box.left() < row_end[std::size_t(row)] + 2;
    row_end[std::size_t(row)] = box.right();
    add_text(l, m.label, box, Qt::AlignLeft | Qt::AlignBottom, f.axis, kAxisText, QStringLiteral("mark label"),
             into_other || box.right() > r.right() + 0.5);
  }
}

// The value axis' grid and line, the bars, the partial group's outline and the marks' lines.
void paint_graphics(const BarChartContent& c, const BarChartLayout& l, QPainter& painter) {
  const QRectF& p = l.plot;
  for (double v : ticks(l)) {
    painter.setPen(QPen(kGrid, 1));
    if (!c.rows) {
      const double y = p.bottom() - v / l.value_max * p.height();
      painter.drawLine(QPointF(p.left(), y), QPointF(p.right(), y));
    } else {
      const double x = p.left() + v / l.value_max * p.width();
      painter.drawLine(QPointF(x, p.top()), QPointF(x, p.bottom()));
    }
  }
  painter.setPen(QPen(QColor(0xb0, 0xb0, 0xb0), 1));
  if (!c.rows) painter.drawLine(p.bottomLeft(), p.bottomRight());
  else painter.drawLine(p.topLeft(), p.bottomLeft());
  for (const auto& placed : l.segments) {
    const BarGroup& group = c.groups[placed.group];
    QColor fill = group.bars[placed.bar].segments[placed.segment].colour;
    if (group.partial) fill.setAlpha(140);
    painter.fillRect(placed.rect, fill);
  }
  painter.setBrush(Qt::NoBrush);
  std::size_t k = 0;
  for (const BarGroup& group : c.groups) {
    for (std::size_t b = 0; b < group.bars.size() && k < l.bars.size(); ++b, ++k) {
      if (!group.partial) continue;   // the epoch in progress: a dashed outline around what is there so far
      painter.setPen(QPen(QColor(0x77, 0x77, 0x77), 1, Qt::DashLine));
      painter.drawRect(l.bars[k]);
    }
  }
  for (const ValueMark& m : c.marks) {
    if (m.at < 0 || m.at > l.value_max) continue;
    const double x = p.left() + m.at / l.value_max * p.width();
    painter.setPen(QPen(QColor(0x70, 0x70, 0x70), 1, Qt::DotLine));
    painter.drawLine(QPointF(x, p.top() - 2), QPointF(x, p.bottom()));
  }
}

void paint_text(const BarChartLayout::Text& t, QPainter& painter) {
  painter.setFont(t.font);
  painter.setPen(t.colour);
  if (!t.vertical) {
    painter.drawText(t.box, t.flags, t.text);
    return;
  }
  painter.save();
  painter.translate(t.box.center());
  painter.rotate(-90);
  painter.drawText(QRectF(-t.box.height() / 2, -t.box.width() / 2, t.box.height(), t.box.width()), t.flags, t.text);
  painter.restore();
}

std::vector<LaidOutText> laid_out_texts(const BarChartLayout& l) {
  std::vector<LaidOutText> out;
  for (const BarChartLayout::Text& t : l.texts) out.push_back(t.said);
  for (const LegendLayout::Placed& p : l.legend.entries)
    out.push_back({p.words, QStringLiteral("legend"), p.words_width > p.text.width() + 0.5});
  return out;
}

}  // namespace

BarChartLayout layout_bar_chart(const BarChartContent& c, const QRectF& target) {
  const Fonts f;
  BarChartLayout out;
  out.value_max = c.value_max;
  out.value_tick = c.value_tick;
  out.value_decimals = c.value_decimals;
  const double top = place_titles(out, c, target, f);
  const double bottom = place_legend(out, c, target, f);
  if (!c.empty_text.isEmpty()) {
    out.plot = QRectF(QPointF(target.left() + kMargin, top), QPointF(target.right() - kMargin, std::max(top + 10, bottom)));
    const QRectF box = out.plot.adjusted(12, 8, -12, -8);
    const bool cut = wrapped_height(QFontMetricsF(f.headline), box.width(), c.empty_text) > box.height() + 0.5;
    add_text(out, c.empty_text, box, Qt::AlignCenter | Qt::TextWordWrap, f.headline, QColor(0x66, 0x66, 0x66),
             QStringLiteral("note"), cut);
    return out;
  }
  const Frame fr = c.rows ? frame_rows(out, c, target, f, top, bottom) : frame_columns(out, c, target, f, top, bottom);
  if (c.value_max <= 0) return out;
  place_segments(out, c);
  place_axis_texts(out, c, target, f);
  place_bar_texts(out, c, target, f, fr);
  place_mark_texts(out, c, target, f, fr);
  return out;
}

std::vector<LaidOutText> laid_out_texts(const BarChartContent& content, const QRectF& target) {
  return laid_out_texts(layout_bar_chart(content, target));
}

void paint_bar_chart(const BarChartContent& c, QPainter& painter, const QRectF& target) {
  const Fonts f;
  const BarChartLayout layout = layout_bar_chart(c, target);
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  painter.fillRect(target, Qt::white);
  if (c.empty_text.isEmpty()) paint_graphics(c, layout, painter);
  for (const BarChartLayout::Text& t : layout.texts) paint_text(t, painter);
  paint_legend(painter, layout.legend_items, layout.legend, f.legend, layout.legend_at, kTitleText);
  painter.restore();
  report_laid_out(laid_out_texts(layout));
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

// Qt Charts plumbing for ChartContent.
#include "charts/chart_render.h"

#include <QBarCategoryAxis>
#include <QChart>
#include <QCursor>
#include <QFontMetricsF>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLegend>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>

#include <cmath>

#include "charts/laid_out_text.h"

namespace mb {

namespace {

QValueAxis* axis(QChart* chart, Qt::Orientation o) {
  const auto axes = chart->axes(o);
  return axes.isEmpty() ? nullptr : qobject_cast<QValueAxis*>(axes.front());
}

void show_tip(QXYSeries* series, const QPointF& at, bool state) {
  if (!state) {
    QToolTip::hideText();
    return;
  }
  const QStringList tips = series->property("tips").toStringList();
  const auto points = series->points();
  if (points.isEmpty()) return;
  int best = 0;
  for (int i = 1; i < points.size(); ++i) {
    if (std::abs(points[i].x() - at.x()) < std::abs(points[best].x() - at.x())) best = i;
  }
  const QString tip = best < tips.size() ? tips[best]
                                         : QStringLiteral("<b>%1</b><br>epoch %2: %3")
                                               .arg(series->name().toHtmlEscaped())
                                               .arg(points[best].x(), 0, 'f', 2)
                                               .arg(points[best].y(), 0, 'f', 3);
  QToolTip::showText(QCursor::pos(), tip);
}

// Range and interval change one after the other, and each change lays the axis out: a new
// range under the old interval could ask Qt Charts for (range / interval) tick labels for a
// moment, a text item each (under ASan a run's live refresh spent minutes there). Count-based
// ticks meanwhile, and dynamic ones only for a sane count.
void set_ticks(QValueAxis* axis, double min, double max, double anchor, double interval) {
  if (axis->min() == min && axis->max() == max && axis->tickType() == QValueAxis::TicksDynamic &&
      axis->tickAnchor() == anchor && axis->tickInterval() == interval)
    return;   // unchanged: no new layout (fit_axes runs on every change of the plot area)
  axis->setTickType(QValueAxis::TicksFixed);
  axis->setRange(min, max);
  if (!(interval > 0) || (max - min) / interval > 200) return;   // fixed ticks: five, Qt's default
  axis->setTickAnchor(anchor);
  axis->setTickInterval(interval);
  axis->setTickType(QValueAxis::TicksDynamic);
}

// Whether `ticks` labels `label` pixels long (along the axis) have room on an axis `length`
// long: Qt Charts hides a label that overlaps the one before it, and on a horizontal axis cuts
// a label wider than the axis' length shared among the ticks, less a padding of 4 on each side
// (a vertical axis' labels, measured, are cut only once they overlap).
bool labels_fit(int ticks, double label, double length, bool vertical) {
  if (vertical) return (ticks - 1) * (label + 4) <= length - label;
  return ticks * (label + 8) <= length;
}

const char* kAxisSpec = "mb_axis_spec";   // on an axis: its AxisSpec
const char* kFitsAxes = "mb_fits_axes";   // on a chart: fit_axes follows its plot area

QVariantList to_variant(const AxisSpec& a) { return {a.lo, a.hi, a.step, a.floor, a.ceil, a.anchored, a.anchor, a.decimals}; }

AxisSpec from_variant(const QVariantList& v) {
  return {v[0].toDouble(), v[1].toDouble(), v[2].toDouble(), v[3].toDouble(), v[4].toDouble(),
          v[5].toBool(),   v[6].toDouble(), v[7].toInt()};
}

// The ticks of `spec` on an axis `length` pixels long: the finest round step whose labels all
// have room.
void fit_axis(QValueAxis* axis, const AxisSpec& spec, double length) {
  const QFontMetricsF fm(axis->labelsFont());
  const bool vertical = axis->orientation() == Qt::Vertical;
  double step = spec.step > 0 ? spec.step : 1;
  double lo = spec.lo, hi = spec.hi, anchor = spec.anchor;
  int decimals = 0;
  for (int tries = 0; tries < 40; ++tries) {
    decimals = spec.decimals >= 0 ? spec.decimals : decimals_for(step);
    double first = 0, last = 0;   // the first and last ticks in range
    if (spec.anchored) {
      first = anchor + std::ceil((lo - anchor) / step - 1e-9) * step;
      last = anchor + std::floor((hi - anchor) / step + 1e-9) * step;
    } else {
      lo = std::max(spec.floor, std::floor(spec.lo / step + 1e-9) * step);
      hi = std::min(spec.ceil, std::ceil(spec.hi / step - 1e-9) * step);
      if (hi <= lo) hi = lo + step;
      anchor = first = lo;
      last = hi;
    }
    const int ticks = int(std::lround((last - first) / step)) + 1;
    const double label = vertical ? fm.height()
                                  : std::max(fm.horizontalAdvance(QString::number(first, 'f', decimals)),
                                             fm.horizontalAdvance(QString::number(last, 'f', decimals)));
    if (length <= 0 || ticks <= 2 || labels_fit(ticks, label, length, vertical)) break;
    step = coarser_step(step, spec.anchored);
  }
  set_ticks(axis, lo, hi, anchor, step);
  const QString format = QStringLiteral("%.%1f").arg(decimals);
  if (axis->labelFormat() != format) axis->setLabelFormat(format);
}

// Category labels (the sweep's batch sizes) stand upright when the categories are too narrow
// for them to lie (Qt Charts would cut "1024" to "1…"; it shares the length among the
// categories' count + 1 boundaries).
void fit_categories(QBarCategoryAxis* axis, double length) {
  const QFontMetricsF fm(axis->labelsFont());
  double widest = 0;
  for (const QString& c : axis->categories()) widest = std::max(widest, fm.horizontalAdvance(c));
  const int count = int(axis->count());
  const int angle = length > 0 && count > 0 && !labels_fit(count + 1, widest, length, false) ? -90 : 0;
  if (axis->labelsAngle() != angle) axis->setLabelsAngle(angle);
}

// Lays a chart out now, its ticks fitted to the result, and again: the fitted y labels' width
// moves the plot's left edge, which the x axis' ticks then follow.
void lay_out(QChart* chart) {
  for (int pass = 0; pass < 3; ++pass) {
    if (chart->layout()) chart->layout()->activate();
    if (pass < 2) fit_axes(chart);
  }
}

}  // namespace

void set_axis(QChart* chart, QValueAxis* axis, const AxisSpec& spec) {
  axis->setProperty(kAxisSpec, to_variant(spec));
  const QRectF plot = chart->plotArea();
  fit_axis(axis, spec, axis->orientation() == Qt::Vertical ? plot.height() : plot.width());
  if (!chart->property(kFitsAxes).toBool()) {
    chart->setProperty(kFitsAxes, true);
    // Queued: the plot area changes in the middle of Qt Charts' layout, which is not to be
    // changed under it; the next pass of the event loop fits the ticks to the new size.
    QObject::connect(chart, &QChart::plotAreaChanged, chart, [chart] { fit_axes(chart); }, Qt::QueuedConnection);
  }
}

void fit_axes(QChart* chart) {
  const QRectF plot = chart->plotArea();
  for (QAbstractAxis* a : chart->axes()) {
    const double length = a->orientation() == Qt::Vertical ? plot.height() : plot.width();
    if (auto* categories = qobject_cast<QBarCategoryAxis*>(a)) fit_categories(categories, length);
    auto* axis = qobject_cast<QValueAxis*>(a);
    const QVariant spec = axis ? axis->property(kAxisSpec) : QVariant();
    if (spec.isValid()) fit_axis(axis, from_variant(spec.toList()), length);
  }
}

void init_chart(QChart* chart) {
  chart->setTheme(QChart::ChartThemeLight);
  chart->setAnimationOptions(QChart::NoAnimation);   // 10 Hz updates: animation only blurs them
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(6, 4, 6, 4));
  QFont legend_font = chart->legend()->font();
  legend_font.setPointSizeF(8.5);
  chart->legend()->setFont(legend_font);   // our legend's font (ChartLegend takes it)
  ChartLegend::set(chart, {});
  QFont title_font = chart->titleFont();
  title_font.setPointSizeF(11);
  chart->setTitleFont(title_font);

  auto* x = new QValueAxis(chart);
  auto* y = new QValueAxis(chart);
  for (QValueAxis* a : {x, y}) {
    QFont f = a->titleFont();
    f.setPointSizeF(9);
    f.setBold(false);
    a->setTitleFont(f);
    QFont lf = a->labelsFont();
    lf.setPointSizeF(8.5);
    a->setLabelsFont(lf);
    a->setGridLineColor(QColor(0xe3, 0xe3, 0xe3));
    a->setMinorGridLineVisible(false);
  }
  x->setTickType(QValueAxis::TicksDynamic);
  x->setLabelFormat("%d");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
}

void apply_content(QChart* chart, const ChartContent& c, LegendNames names) {
  if (!axis(chart, Qt::Horizontal)) init_chart(chart);
  QValueAxis* x = axis(chart, Qt::Horizontal);
  QValueAxis* y = axis(chart, Qt::Vertical);

  if (chart->title() != c.title) chart->setTitle(c.title);
  x->setTitleText(c.x_title);
  y->setTitleText(c.y_title);

  const auto existing = chart->series();
  bool same = existing.size() == qsizetype(c.series.size());
  for (qsizetype i = 0; same && i < existing.size(); ++i)
    same = existing[i]->objectName() == c.series[std::size_t(i)].id &&
           (existing[i]->type() == QAbstractSeries::SeriesTypeScatter) == !c.series[std::size_t(i)].line;
  if (!same) {
    chart->removeAllSeries();
    for (const auto& spec : c.series) {
      QXYSeries* s = spec.line ? static_cast<QXYSeries*>(new QLineSeries) : new QScatterSeries;
      s->setObjectName(spec.id);
      chart->addSeries(s);
      s->attachAxis(x);
      s->attachAxis(y);
      QObject::connect(s, &QXYSeries::hovered, s, [s](const QPointF& p, bool state) { show_tip(s, p, state); });
    }
  }
  const auto series = chart->series();
  for (qsizetype i = 0; i < series.size(); ++i) {
    auto* s = static_cast<QXYSeries*>(series[i]);
    const SeriesSpec& spec = c.series[std::size_t(i)];
    if (s->name() != spec.name) s->setName(spec.name);
    if (auto* scatter = qobject_cast<QScatterSeries*>(s)) {
      // Points only: the pen's colour fills the marker, a white rim keeps overlapping points apart.
      scatter->setColor(spec.pen.color());
      scatter->setBorderColor(Qt::white);
      scatter->setMarkerShape(QScatterSeries::MarkerShapeCircle);
      scatter->setMarkerSize(spec.marker_size);   // QScatterSeries' own, not QXYSeries'
    } else {
      if (s->pen() != spec.pen) s->setPen(spec.pen);
      s->setPointsVisible(spec.markers);
      s->setMarkerSize(spec.marker_size);
    }
    s->setProperty("tips", spec.tips);
    if (s->points() != spec.points) s->replace(spec.points);
  }

  // Ticks: on whole epochs (replicas) and on round y values (see fit_y), as many as have room.
  set_axis(chart, x, {.lo = c.x_min, .hi = c.x_max, .step = c.x_tick_interval, .anchored = true, .anchor = c.x_tick_anchor,
                      .decimals = 0});
  set_axis(chart, y, {.lo = c.y_min, .hi = c.y_max, .step = c.y_tick_interval, .floor = c.y_floor, .ceil = c.y_ceil});
  ChartLegend::set(chart, c.legend, names);
}

void render_chart_offscreen(const std::function<void(QChart*)>& fill, QPainter& painter, const QRectF& target) {
  QGraphicsScene scene;
  auto* chart = new QChart;   // owned by the scene
  scene.addItem(chart);
  fill(chart);
  chart->setGeometry(QRectF(QPointF(0, 0), target.size()));
  lay_out(chart);   // now, not on the next event loop pass
  report_laid_out(laid_out_texts(chart));
  scene.setSceneRect(QRectF(QPointF(0, 0), target.size()));
  painter.save();
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setRenderHint(QPainter::TextAntialiasing);
  scene.render(&painter, target, scene.sceneRect());
  painter.restore();
}

void render_content(const ChartContent& content, QPainter& painter, const QRectF& target) {
  render_chart_offscreen(
      [&](QChart* chart) {
        init_chart(chart);
        apply_content(chart, content, LegendNames::Full);
      },
      painter, target);
}

}  // namespace mb

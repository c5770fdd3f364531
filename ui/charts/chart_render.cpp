// Qt Charts plumbing for ChartContent.
#include "charts/chart_render.h"

#include <QChart>
#include <QCursor>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>

#include <cmath>

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
  axis->setTickType(QValueAxis::TicksFixed);
  axis->setRange(min, max);
  if (!(interval > 0) || (max - min) / interval > 200) return;   // fixed ticks: five, Qt's default
  axis->setTickAnchor(anchor);
  axis->setTickInterval(interval);
  axis->setTickType(QValueAxis::TicksDynamic);
}

}  // namespace

void init_chart(QChart* chart) {
  chart->setTheme(QChart::ChartThemeLight);
  chart->setAnimationOptions(QChart::NoAnimation);   // 10 Hz updates: animation only blurs them
  chart->setBackgroundRoundness(0);
  chart->setMargins(QMargins(6, 4, 6, 4));
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->legend()->setShowToolTips(true);
  QFont legend_font = chart->legend()->font();
  legend_font.setPointSizeF(8.5);
  chart->legend()->setFont(legend_font);
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

void apply_content(QChart* chart, const ChartContent& c) {
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
    for (QLegendMarker* m : chart->legend()->markers(s)) m->setVisible(spec.in_legend);
  }

  // Ticks: dynamic, anchored on whole epochs and on round y values (see fit_y).
  set_ticks(x, c.x_min, c.x_max, c.x_tick_anchor, c.x_tick_interval);
  set_ticks(y, c.y_min, c.y_max, c.y_min, c.y_tick_interval);
  y->setLabelFormat(c.y_format);
}

void render_chart_offscreen(const std::function<void(QChart*)>& fill, QPainter& painter, const QRectF& target) {
  QGraphicsScene scene;
  auto* chart = new QChart;   // owned by the scene
  scene.addItem(chart);
  fill(chart);
  chart->setGeometry(QRectF(QPointF(0, 0), target.size()));
  if (chart->layout()) chart->layout()->activate();   // lay out now, not on the next event loop pass
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
        apply_content(chart, content);
      },
      painter, target);
}

}  // namespace mb

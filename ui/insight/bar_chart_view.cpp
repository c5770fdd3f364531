// Bar chart widget (see bar_chart_view.h).
#include "insight/bar_chart_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include "insight/bar_chart_render.h"

namespace mb {

BarChartView::BarChartView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumSize(320, 220);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void BarChartView::set_content(BarChartContent content) {
  content_ = std::move(content);
  update();
}

void BarChartView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  paint_bar_chart(content_, painter, QRectF(rect()));
}

void BarChartView::mouseMoveEvent(QMouseEvent* event) {
  const QString tip = bar_chart_tip(content_, QRectF(rect()), event->position());
  if (tip == shown_tip_) return;
  shown_tip_ = tip;
  if (tip.isEmpty()) QToolTip::hideText();
  else QToolTip::showText(event->globalPosition().toPoint(), tip, this);
}

void BarChartView::leaveEvent(QEvent*) {
  shown_tip_.clear();
  QToolTip::hideText();
}

}  // namespace mb

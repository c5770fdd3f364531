// A widget showing one BarChartContent (the breakdown or the timeline), with the hovered
// segment's numbers as a tooltip. Repaints only when its content changes.
#pragma once
#include <QWidget>

#include "insight/bar_chart.h"

namespace mb {

class BarChartView : public QWidget {
  Q_OBJECT
 public:
  explicit BarChartView(QWidget* parent = nullptr);

  void set_content(BarChartContent content);
  const BarChartContent& content() const { return content_; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void leaveEvent(QEvent* event) override;

 private:
  BarChartContent content_;
  QString shown_tip_;
};

}  // namespace mb

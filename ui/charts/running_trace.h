// The live run's running loss/accuracy trace, bounded in size however long the run.
#pragma once
#include <QList>
#include <QPointF>

namespace mb {

// A running trace that never holds more than kMaxPoints: when it fills up, every other point
// is dropped and from then on only every 2nd (4th, ...) new point is kept, so however long
// the run, the points stay evenly spread, the newest is kept, and a redraw stays cheap.
class RunningTrace {
 public:
  static constexpr qsizetype kMaxPoints = 2000;
  void append(QPointF p);
  const QList<QPointF>& points() const { return points_; }

 private:
  QList<QPointF> points_;
  int stride_ = 1;    // one point kept per stride_ appended
  int skipped_ = 0;   // appended since the last kept point
};

}  // namespace mb

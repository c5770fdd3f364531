// Thinning of the running trace.
#include "charts/running_trace.h"

#include <algorithm>

namespace mb {

void RunningTrace::append(QPointF p) {
  if (++skipped_ < stride_) return;
  skipped_ = 0;
  points_.append(p);
  if (points_.size() < kMaxPoints) return;
  QList<QPointF> kept;
  kept.reserve(kMaxPoints / 2);
  for (qsizetype i = points_.size() - 1; i >= 0; i -= 2) kept.append(points_[i]);   // the newest stays
  std::reverse(kept.begin(), kept.end());
  points_ = std::move(kept);
  stride_ *= 2;
}

}  // namespace mb

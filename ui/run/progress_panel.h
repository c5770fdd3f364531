// The progress line under the charts: which run of the plan, the current epoch as a progress
// bar, step, ETA, images/s and the running loss/accuracy.
#pragma once
#include <QWidget>

#include "run/metatypes.h"

class QLabel;
class QProgressBar;

namespace mb {

class ProgressPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProgressPanel(QWidget* parent = nullptr);

  void run_started(int index, int count, const QString& label);
  void show_step(const StepProgress& p);
  void show_message(const QString& text);   // loading, finished, stopped, failed
  void idle(const QString& text, bool finished = false);   // finished: a full bar, “done”

  QProgressBar* bar() const { return bar_; }
  QString details() const;

 private:
  QLabel* run_label_;
  QProgressBar* bar_;
  QLabel* details_;
};

}  // namespace mb

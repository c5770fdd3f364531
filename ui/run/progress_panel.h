// The progress line, the window's status bar: which run of the plan, the current epoch as a
// progress bar, step, ETA, images/s and the running loss/accuracy, and the window's passing
// messages (QStatusBar::showMessage) in place of those details while they last. One line of
// text whatever it says, so the bar never changes height.
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
  // A passing message of the status bar (empty: it has gone): shown instead of the details
  // while it lasts, then the details again.
  void show_status(const QString& message);

  QProgressBar* bar() const { return bar_; }
  QString details() const { return details_text_; }   // the run's, whatever message is passing

 private:
  void update_details();

  QLabel* run_label_;
  QProgressBar* bar_;
  QLabel* details_;
  QString details_text_;
  QString status_message_;
};

}  // namespace mb

// Progress line widget (the window's status bar).
#include "run/progress_panel.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QProgressBar>
#include <QToolTip>

#include <algorithm>

#include "common/format.h"

namespace mb {

namespace {

// One line of plain text that asks for its whole width but shrinks to a few characters,
// ending in "…" (the whole text in its tooltip) where the line is too short: a long run name
// or summary never widens the window nor wraps into a taller status bar.
class ElidingLabel : public QLabel {
 public:
  explicit ElidingLabel(QWidget* parent) : QLabel(parent) { setTextFormat(Qt::PlainText); }

  QSize minimumSizeHint() const override {
    const QSize full = QLabel::minimumSizeHint();
    return {std::min(full.width(), fontMetrics().horizontalAdvance(QStringLiteral("Run…"))), full.height()};
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    painter.setPen(palette().color(foregroundRole()));
    painter.drawText(contentsRect(), int(alignment()) | Qt::TextSingleLine, shown());
  }

  bool event(QEvent* e) override {
    if (e->type() == QEvent::ToolTip && toolTip().isEmpty()) {
      // The whole text, only where it had to be shortened.
      if (shown() != text()) QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), text(), this);
      else QToolTip::hideText();
      return true;
    }
    return QLabel::event(e);
  }

 private:
  QString shown() const { return fontMetrics().elidedText(text(), Qt::ElideRight, contentsRect().width()); }
};

}  // namespace

ProgressPanel::ProgressPanel(QWidget* parent) : QWidget(parent) {
  run_label_ = new ElidingLabel(this);
  run_label_->setObjectName("progress_run");
  QFont bold = run_label_->font();
  bold.setBold(true);
  run_label_->setFont(bold);
  bar_ = new QProgressBar(this);
  bar_->setObjectName("epoch_progress");
  bar_->setRange(0, 1);
  bar_->setValue(0);
  bar_->setTextVisible(true);
  // Wide enough for its longest usual text (the style's own hint does not read the text),
  // with a few characters' room around it.
  const QFontMetrics fm = bar_->fontMetrics();
  bar_->setMinimumWidth(std::max(bar_->sizeHint().width(),
                                 fm.horizontalAdvance(tr("epoch %1/%2 · %3 %").arg(100).arg(100).arg(100)) +
                                     4 * fm.averageCharWidth()));
  details_ = new ElidingLabel(this);
  details_->setObjectName("progress_details");
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(run_label_);
  layout->addWidget(bar_, 2);
  layout->addWidget(details_, 3);
  idle(tr("Ready"));
}

void ProgressPanel::run_started(int index, int count, const QString& label) {
  run_label_->setText(count > 1 ? tr("Run %1 of %2: %3").arg(index + 1).arg(count).arg(label) : label);
  bar_->setRange(0, 0);   // busy indicator until the first step arrives
  bar_->setFormat(tr("starting"));
  details_text_ = tr("Preparing replicas…");
  update_details();
}

void ProgressPanel::show_step(const StepProgress& p) {
  bar_->setRange(0, int(std::max<int64_t>(1, p.steps)));
  bar_->setValue(int(p.step));
  bar_->setFormat(tr("epoch %1/%2 · %p %").arg(p.epoch).arg(p.epochs));
  details_text_ = tr("step %1/%2 · ETA %3 · %4 · loss %5 · acc %6")
                      .arg(p.step)
                      .arg(p.steps)
                      .arg(format_seconds(p.eta_s), format_rate(p.images_per_s))
                      .arg(p.running_loss, 0, 'f', 3)
                      .arg(format_percent(p.running_acc, 1));
  update_details();
}

void ProgressPanel::show_message(const QString& text) {
  details_text_ = text;
  update_details();
}

void ProgressPanel::idle(const QString& text, bool finished) {
  run_label_->setText(finished ? tr("Done") : tr("Idle"));
  bar_->setRange(0, 1);
  bar_->setValue(finished ? 1 : 0);
  bar_->setFormat(finished ? tr("done") : QString());
  details_text_ = text;
  update_details();
}

void ProgressPanel::show_status(const QString& message) {
  status_message_ = message;
  update_details();
}

void ProgressPanel::update_details() { details_->setText(status_message_.isEmpty() ? details_text_ : status_message_); }

}  // namespace mb

// Progress line widget.
#include "run/progress_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>

#include "common/format.h"

namespace mb {

ProgressPanel::ProgressPanel(QWidget* parent) : QWidget(parent) {
  run_label_ = new QLabel(this);
  run_label_->setObjectName("progress_run");
  run_label_->setMinimumWidth(180);
  bar_ = new QProgressBar(this);
  bar_->setObjectName("epoch_progress");
  bar_->setRange(0, 1);
  bar_->setValue(0);
  bar_->setTextVisible(true);
  bar_->setMinimumWidth(200);
  details_ = new QLabel(this);
  details_->setObjectName("progress_details");
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setWordWrap(true);
  details_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);   // long summaries wrap, never widen the window
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 2, 0, 2);
  layout->addWidget(run_label_);
  layout->addWidget(bar_, 2);
  layout->addWidget(details_, 3);
  idle(tr("Ready"));
}

void ProgressPanel::run_started(int index, int count, const QString& label) {
  run_label_->setText(count > 1 ? tr("<b>Run %1 of %2</b>: %3").arg(index + 1).arg(count).arg(label.toHtmlEscaped())
                                : tr("<b>%1</b>").arg(label.toHtmlEscaped()));
  bar_->setRange(0, 0);   // busy indicator until the first step arrives
  bar_->setFormat(tr("starting"));
  details_->setText(tr("Preparing replicas…"));
}

void ProgressPanel::show_step(const StepProgress& p) {
  bar_->setRange(0, int(std::max<int64_t>(1, p.steps)));
  bar_->setValue(int(p.step));
  bar_->setFormat(tr("epoch %1/%2 · %p %").arg(p.epoch).arg(p.epochs));
  details_->setText(tr("step %1/%2 · ETA %3 · %4 · loss %5 · acc %6")
                        .arg(p.step)
                        .arg(p.steps)
                        .arg(format_seconds(p.eta_s), format_rate(p.images_per_s))
                        .arg(p.running_loss, 0, 'f', 3)
                        .arg(format_percent(p.running_acc, 1)));
}

void ProgressPanel::show_message(const QString& text) { details_->setText(text); }

void ProgressPanel::idle(const QString& text, bool finished) {
  run_label_->setText(finished ? tr("<b>Done</b>") : tr("<b>Idle</b>"));
  bar_->setRange(0, 1);
  bar_->setValue(finished ? 1 : 0);
  bar_->setFormat(finished ? tr("done") : QString());
  details_->setText(text);
}

QString ProgressPanel::details() const { return details_->text(); }

}  // namespace mb

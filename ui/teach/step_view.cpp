// The classroom view's widgets (see step_view.h).
#include "teach/step_view.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QScreen>
#include <QToolTip>
#include <QVBoxLayout>

#include "teach/training_images.h"

namespace mb {

StepView::StepView(QWidget* parent) : QWidget(parent) {
  setObjectName("step_view");
  setMinimumSize(480, 270);
  setMouseTracking(true);
  setAttribute(Qt::WA_OpaquePaintEvent);
}

void StepView::set_content(const StepPicture* picture, const TrainingImages* images, const std::string* dataset,
                           const QString* idle_text) {
  picture_ = picture, images_ = images, dataset_ = dataset, idle_text_ = idle_text;
  update();
}

void StepView::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  if (!picture_) {
    painter.fillRect(rect(), Qt::white);
    return;
  }
  paint_step(painter, QRectF(rect()), *picture_, images_ ? images_->images() : nullptr, *dataset_, *idle_text_, &canvas_);
}

bool StepView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    const QString tip = tip_at(help->pos());
    if (tip.isEmpty()) {
      QToolTip::hideText();
      e->ignore();
    } else {
      QToolTip::showText(help->globalPos(), tip, this);
    }
    return true;
  }
  return QWidget::event(e);
}

void StepView::keyPressEvent(QKeyEvent* e) {
  if (isWindow() && (e->key() == Qt::Key_Escape || e->key() == Qt::Key_F11)) {
    close();
    return;
  }
  QWidget::keyPressEvent(e);
}

StepPanel::StepPanel(QWidget* parent) : QWidget(parent) {
  setObjectName("step_panel");
  images_ = new TrainingImages(this);
  view_ = new StepView(this);
  status_ = new QLabel(this);
  status_->setObjectName("step_status");
  status_->setWordWrap(true);
  QFont big = status_->font();
  big.setPointSizeF(big.pointSizeF() * 1.15);
  status_->setFont(big);
  present_ = new QPushButton(tr("Full screen"), this);
  present_->setObjectName("step_full_screen");
  present_->setCheckable(true);
  present_->setToolTip(tr("Show the step alone on the whole screen (for the projector); Esc returns"));
  auto* export_button = new QPushButton(tr("Export PNG…"), this);
  export_button->setObjectName("step_export_png");
  export_button->setToolTip(tr("Save this step as a PNG for slides"));
  auto* top = new QHBoxLayout;
  top->addWidget(status_, 1);
  top->addWidget(present_);
  top->addWidget(export_button);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(view_, 1);

  idle_text_ = tr("Press Run: this view then shows a real training step every 16 steps, with the run's own images "
                  "and numbers. Tick \u201cTeaching pace\u201d in the training settings to slow a short run to one step "
                  "a second, so the class can follow each one. Hover a word for its meaning.");
  view_->set_content(&picture_, images_, &dataset_, &idle_text_);
  connect(images_, &TrainingImages::ready, this, &StepPanel::refresh);
  connect(present_, &QPushButton::toggled, this, &StepPanel::set_presenting);
  connect(export_button, &QPushButton::clicked, this, &StepPanel::export_requested);
  refresh();
}

StepPanel::~StepPanel() { delete presentation_.data(); }

void StepPanel::run_started(const RunConfig& config) {
  run_ = config;
  dataset_ = config.dataset;
  running_ = true;
  images_->request(QString::fromStdString(config.data_dir));
  refresh();
}

void StepPanel::show_step(const StepProgress& p) {
  if (!p.has_detail) return;
  last_ = p;
  picture_ = describe_step(p, run_);
  refresh();
}

void StepPanel::run_finished() {
  running_ = false;
  refresh();
}

void StepPanel::set_presenting(bool on) {
  if (on == presenting()) return;
  if (on) {
    auto* window = new StepView(nullptr);
    window->setAttribute(Qt::WA_DeleteOnClose);
    window->setWindowTitle(tr("mirrorbench: one training step"));
    window->set_content(&picture_, images_, &dataset_, &idle_text_);
    presentation_ = window;
    connect(window, &QObject::destroyed, this, [this] {
      const QSignalBlocker block(present_);
      present_->setChecked(false);
    });
    // On the screen the workbench is on (the projector's, when it was moved there), covering
    // it before the full-screen state is asked for: without a window manager to honour that
    // state (a bare X server, a kiosk) the window is otherwise left at its default size.
    if (QScreen* where = screen()) {
      window->setScreen(where);
      window->setGeometry(where->geometry());
    }
    window->showFullScreen();
    window->raise();
    window->activateWindow();   // Esc reaches it
  } else {
    presentation_->close();
  }
  const QSignalBlocker block(present_);
  present_->setChecked(on);
}

QImage StepPanel::render(QSize size) const {
  return render_step_image(picture_, images_->images(), dataset_, idle_text_, size);
}

void StepPanel::refresh() {
  QString status;
  if (picture_.empty)
    status = running_ ? tr("Waiting for the first detailed step…") : tr("No step yet.");
  else if (running_)
    status = run_.step_delay_s > 0
                 ? tr("<b>Live, at teaching pace</b>: every step, about one every %1 s.").arg(run_.step_delay_s, 0, 'g', 3)
                 : tr("<b>Live</b>: every 16th step of the run (tick Teaching pace to see each one).");
  else
    status = tr("The last step shown of the finished run.");
  if (!picture_.empty && !images_->images())
    status += images_->loading() ? tr(" The images are loading (grey until then).")
                                 : tr(" The training images could not be read: grey tiles stand for them.");
  status_->setText(status);
  view_->update();
  if (presentation_) presentation_->update();
}

}  // namespace mb

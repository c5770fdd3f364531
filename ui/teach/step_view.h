// The "One step" tab: the classroom picture of the latest detailed training step (every 16th
// step, every step at teaching pace), with tooltips for every term and image, a full-screen
// window for the projector and a PNG for slides.
#pragma once
#include <QPointer>
#include <QWidget>

#include <string>

#include "records/run_record.h"
#include "teach/step_painter.h"
#include "teach/step_picture.h"
#include "trainer/train_observer.h"

class QLabel;
class QPushButton;

namespace mb {

class TrainingImages;

// The picture alone, painted to fit the widget.
class StepView : public QWidget {
  Q_OBJECT
 public:
  explicit StepView(QWidget* parent = nullptr);

  void set_content(const StepPicture* picture, const TrainingImages* images, const std::string* dataset,
                   const QString* idle_text);
  QString tip_at(const QPoint& at) const { return canvas_.tip_at(at); }
  const StepCanvas& canvas() const { return canvas_; }   // of the last paint

  QSize sizeHint() const override { return {960, 540}; }

 protected:
  void paintEvent(QPaintEvent* event) override;
  bool event(QEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;   // Esc leaves full screen

 private:
  const StepPicture* picture_ = nullptr;
  const TrainingImages* images_ = nullptr;
  const std::string* dataset_ = nullptr;
  const QString* idle_text_ = nullptr;
  StepCanvas canvas_;
};

class StepPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StepPanel(QWidget* parent = nullptr);
  ~StepPanel() override;

  void run_started(const RunConfig& config);   // whose steps follow (devices, images, pace)
  void show_step(const StepProgress& progress);   // steps without detail are ignored
  void run_finished();

  const StepPicture& picture() const { return picture_; }
  StepView* view() const { return view_; }
  TrainingImages* images() const { return images_; }
  bool presenting() const { return presentation_ != nullptr; }
  void set_presenting(bool on);                // the picture full screen (Esc leaves)

  QImage render(QSize size) const;             // what Export PNG writes

  static constexpr int kDefaultExportWidth = 1920, kDefaultExportHeight = 1080;

 signals:
  void export_requested();

 private:
  void refresh();

  TrainingImages* images_;
  StepView* view_;
  QPointer<StepView> presentation_;
  QLabel* status_;
  QPushButton* present_;
  RunConfig run_;
  std::string dataset_;
  StepProgress last_;
  StepPicture picture_;
  QString idle_text_;
  bool running_ = false;
};

}  // namespace mb

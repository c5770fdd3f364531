// Calibrates this machine for the scaling predictor (core/experiment/calibrate.h) off the GUI
// thread: under a minute with every core busy, so the window never runs it beside a training
// run. Cancel stops after the point being measured.
#pragma once
#include <QObject>
#include <QString>

#include <atomic>
#include <thread>

#include "experiment/calibrate.h"
#include "insight/prediction.h"

namespace mb {

class CalibrationRunner : public QObject {
  Q_OBJECT
 public:
  explicit CalibrationRunner(QObject* parent = nullptr);
  ~CalibrationRunner() override;   // cancels and waits

  bool running() const { return running_; }
  // Starts measuring; false when a calibration is already running.
  bool start(const CalibrateOptions& options);
  void cancel();

 signals:
  void progress(const QString& line);   // one per measured point
  void finished(const mb::MachineCalibration& calibration);
  void failed(const QString& message, bool cancelled);

 private:
  void join();

  std::thread thread_;
  std::atomic<bool> cancel_{false};
  bool running_ = false;               // GUI thread only
};

}  // namespace mb

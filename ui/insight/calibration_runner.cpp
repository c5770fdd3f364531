// The calibration thread (see calibration_runner.h). Results come back to the GUI thread as
// queued calls; the thread is joined there, or by the destructor.
#include "insight/calibration_runner.h"

#include <spdlog/spdlog.h>

#include "backends/devices.h"
#include "backends/registry.h"
#include "util/system_info.h"

namespace mb {

namespace {
struct Cancelled {};   // thrown from the progress callback: calibrate_cpu unwinds between points
}  // namespace

CalibrationRunner::CalibrationRunner(QObject* parent) : QObject(parent) {}

CalibrationRunner::~CalibrationRunner() {
  cancel();
  join();
}

void CalibrationRunner::join() {
  if (thread_.joinable()) thread_.join();
}

void CalibrationRunner::cancel() { cancel_.store(true); }

bool CalibrationRunner::start(const CalibrateOptions& options) {
  if (running_) return false;
  join();
  running_ = true;
  cancel_.store(false);
  thread_ = std::thread([this, options] {
    MachineCalibration m;
    QString error;
    bool cancelled = false;
    try {
      m.backend = resolve_backend(DeviceKind::Cpu, options.backend);
      m.cpu_model = cpu_model_name();
      m.calibration = calibrate_cpu(options, [this](const std::string& line) {
        if (cancel_.load()) throw Cancelled{};
        spdlog::info("calibration: {}", line);
        const QString text = QString::fromStdString(line);
        QMetaObject::invokeMethod(this, [this, text] { emit progress(text); }, Qt::QueuedConnection);
      });
      m.measured_at = iso8601_now_utc();
    } catch (const Cancelled&) {
      cancelled = true;
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [this, m, error, cancelled] {
          join();
          running_ = false;
          if (cancelled) emit failed(tr("Calibration cancelled"), true);
          else if (!error.isEmpty()) emit failed(error, false);
          else emit finished(m);
        },
        Qt::QueuedConnection);
  });
  return true;
}

}  // namespace mb

// spdlog -> Qt bridge.
#include "log/log_sink.h"

#include <QDateTime>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace mb {

void QtLogSink::detach() {
  std::lock_guard lock(mutex_);
  bridge_ = nullptr;
}

void QtLogSink::sink_it_(const spdlog::details::log_msg& msg) {
  if (!bridge_) return;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(msg.time.time_since_epoch()).count();
  const QString time = QDateTime::fromMSecsSinceEpoch(ms).toString(QStringLiteral("HH:mm:ss.zzz"));
  const QString text = QString::fromUtf8(msg.payload.data(), qsizetype(msg.payload.size()));
  emit bridge_->record(int(msg.level), time, text);   // queued: the receiver is in the GUI thread
}

// spdlog's logger reads its sink vector without a lock, and nothing can take one around it, so
// the vector is only changed while no other thread logs: the window registers before its
// RunController starts a run (the only source of log records off the GUI thread) and
// unregisters after ~MainWindow has joined the trainer thread (controller_->shutdown()).
LogSinkRegistration::LogSinkRegistration(LogBridge* bridge) : sink_(std::make_shared<QtLogSink>(bridge)) {
  sink_->set_level(spdlog::level::trace);
  spdlog::default_logger()->sinks().push_back(sink_);
}

LogSinkRegistration::~LogSinkRegistration() {
  // No other thread logs now (see above); detach() still makes a late record a no-op.
  sink_->detach();
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

}  // namespace mb

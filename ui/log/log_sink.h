// An spdlog sink that forwards every record to the GUI thread as a queued Qt signal, so the
// core and the trainer threads log as usual and the log panel shows it.
#pragma once
#include <QObject>
#include <QString>

#include <memory>
#include <mutex>

#include <spdlog/sinks/base_sink.h>

namespace mb {

// Lives in the GUI thread; the sink emits on it from any thread (Qt queues the delivery).
class LogBridge : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
 signals:
  void record(int level, const QString& time, const QString& message);   // level: spdlog::level
};

class QtLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit QtLogSink(LogBridge* bridge) : bridge_(bridge) {}
  // Called before the bridge dies; later records are dropped.
  void detach();

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  LogBridge* bridge_;   // guarded by base_sink's mutex
};

// Adds a QtLogSink to spdlog's default logger (keeping its console sink) and removes it
// again on destruction. One per window. Create and destroy it only while no other thread logs:
// spdlog changes the sink list without a lock (see log_sink.cpp).
class LogSinkRegistration {
 public:
  explicit LogSinkRegistration(LogBridge* bridge);
  ~LogSinkRegistration();
  LogSinkRegistration(const LogSinkRegistration&) = delete;
  LogSinkRegistration& operator=(const LogSinkRegistration&) = delete;

 private:
  std::shared_ptr<QtLogSink> sink_;
};

}  // namespace mb

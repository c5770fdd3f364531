// A run's record from what the trainer reports (see record_builder.h).
#include "trainer/record_builder.h"

#include <fmt/format.h>

#include "util/system_info.h"

namespace mb {

RecordBuilder::RecordBuilder(const RunConfig& config) {
  record_.config = config;
  record_.config.start_time = iso8601_now_utc();
  record_.id = make_run_id(record_.config);
  record_.name = config.processes > 1 ? fmt::format("{} processes x {}", config.processes, config.devices_text())
                                      : config.devices_text() + (config.simulated ? " (simulated)" : "");
}

bool RecordBuilder::connected(const std::string& communicator) {
  std::lock_guard lock(mutex_);
  const bool changed = !record_.config.communicator.empty() && record_.config.communicator != communicator;
  record_.config.communicator = communicator;
  return changed;
}

std::string RecordBuilder::communicator() const {
  std::lock_guard lock(mutex_);
  return record_.config.communicator;
}

void RecordBuilder::warmed_up(double seconds, const CommProfile& comm, const EngineReport& engine) {
  std::lock_guard lock(mutex_);
  record_.warmup_s = seconds;
  record_.comm = comm;
  record_.engine = engine;
}

void RecordBuilder::engine_reported(const EngineReport& engine) {
  std::lock_guard lock(mutex_);
  record_.engine = engine;
}

std::size_t RecordBuilder::shares_changed(int64_t step, const std::vector<int64_t>& shares) {
  std::lock_guard lock(mutex_);
  record_.config.share_changes.push_back({step, shares});
  return record_.config.share_changes.size();
}

void RecordBuilder::epoch_ended(const EpochMetrics& epoch) {
  std::lock_guard lock(mutex_);
  record_.epochs.push_back(epoch);
}

void RecordBuilder::out_of_sync(const std::string& what) {
  std::lock_guard lock(mutex_);
  record_.replicas_in_sync = false;
  if (out_of_sync_.empty()) out_of_sync_ = what;
}

void RecordBuilder::failed(const std::string& error) {
  std::lock_guard lock(mutex_);
  if (first_error_.empty()) first_error_ = error;
}

void RecordBuilder::stopped() {
  std::lock_guard lock(mutex_);
  stopped_ = true;
}

bool RecordBuilder::has_failed() const {
  std::lock_guard lock(mutex_);
  return !first_error_.empty();
}

bool RecordBuilder::in_sync() const {
  std::lock_guard lock(mutex_);
  return record_.replicas_in_sync;
}

std::string RecordBuilder::error() const {
  std::lock_guard lock(mutex_);
  return first_error_.empty() ? out_of_sync_ : first_error_;
}

int RecordBuilder::epochs_done() const {
  std::lock_guard lock(mutex_);
  return int(record_.epochs.size());
}

RunRecord RecordBuilder::snapshot() const {
  std::lock_guard lock(mutex_);
  return snapshot_locked();
}

RunRecord RecordBuilder::snapshot_locked() const {
  RunRecord r = record_;
  const std::string& error = first_error_.empty() ? out_of_sync_ : first_error_;
  if (!error.empty()) {
    r.status = RunStatus::Failed;
    r.error = error;
  } else if (stopped_ && int(r.epochs.size()) < r.config.epochs) {
    r.status = RunStatus::Stopped;
  } else {
    r.status = RunStatus::Completed;
  }
  return r;
}

}  // namespace mb

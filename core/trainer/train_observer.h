// What a front end sees of a run while it trains: the start (its resolved configuration),
// progress of the steps (with the per-replica breakdown, and every 16th step in detail for the
// classroom view), each finished epoch, and log lines. Value types only, so a GUI can queue
// them across threads.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "records/run_record.h"
#include "util/phase_times.h"

namespace mb {

// One training step as it happened, for the classroom view: the global batch, each replica's
// share of it, what each computed from its share alone, the all-reduce, and the identical
// update that arrived at every replica (equal parameter digests).
struct ReplicaStepDetail {
  int64_t share_begin = 0, share_count = 0;   // this replica's samples: the step's [begin, begin+count)
  double loss = 0;                            // mean cross-entropy over its own samples
  int64_t correct = 0;
  double grad_norm = 0;                       // its own gradient, before the all-reduce (NaN: not known)
  std::string digest;                         // its parameters after the update
  PhaseTimes phases;                          // this step's
};
struct StepDetail {
  int64_t global_batch = 0;
  std::vector<int32_t> samples;               // the step's first sample indices (at most 256), in order
  double allreduce_bytes = 0;                 // the gradient each replica sends and receives
  std::vector<ReplicaStepDetail> replicas;
};

struct StepProgress {
  int epoch = 0, epochs = 0;          // 1-based epoch
  int64_t step = 0, steps = 0;        // 1-based step within the epoch
  int64_t images_done = 0;            // in this epoch
  double epoch_elapsed_s = 0;
  double images_per_s = 0;
  double eta_s = 0;                   // rest of this epoch
  double running_loss = 0, running_acc = 0;
  // Where the last reported steps went, per replica (recent[k][r]: the k-th of the last few
  // reports, oldest first; a report covers steps_per_report steps): the live timeline.
  std::vector<std::vector<PhaseTimes>> recent;
  int steps_per_report = 1;
  // Per replica, this epoch's phases summed over its steps so far: the breakdown of the epoch
  // in progress (EpochMetrics::replica_times once it ends).
  std::vector<PhaseTimes> epoch_times;
  // Every 16th step, and every step at teaching pace (TrainConfig::step_delay_s): the step in
  // detail. Such steps always reach on_step (others are reported at most every 50 ms).
  bool has_detail = false;
  StepDetail detail;
};

enum class LogLevel { Info, Warning, Error };

// Called from a training thread: keep it short, copy values, do not touch GUI objects.
// The trainer's log lines also go to spdlog; on_log is for front ends that show them per run.
struct TrainObserver {
  std::function<void(const RunConfig&)> on_start;
  std::function<void(const StepProgress&)> on_step;
  std::function<void(const EpochMetrics&)> on_epoch;
  std::function<void(LogLevel, const std::string&)> on_log;
  // A replica thread is stuck inside a device driver after the run failed (replica_threads.h):
  // the record as it would be returned (status failed). run() cannot return while that thread
  // may still touch its state, so a front end ends the process here (the CLI writes its
  // outputs and exits) or tells the user to restart; without it the trainer logs that.
  std::function<void(const RunRecord&)> on_stuck;
};

// One log line to spdlog and to the observer.
void log_line(const TrainObserver& observer, LogLevel level, const std::string& line);

}  // namespace mb

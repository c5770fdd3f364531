// A run record: everything needed to compare runs later (configuration, machine, per-epoch
// metrics, outcome), stored as JSON per run and exportable as CSV. Writes are atomic.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/run_config.h"
#include "util/engine_report.h"
#include "util/phase_times.h"

namespace mb {

struct EpochMetrics {
  int epoch = 0;               // 1-based
  double time_s = 0;           // training wall time of the epoch (no validation)
  double allreduce_s = 0;      // time inside the gradient all-reduce (replica 0's view)
  double train_loss = 0;       // running over the epoch, as Keras reports it
  double train_acc = 0;
  double val_loss = 0;
  double val_acc = 0;
  double images_per_s = 0;     // training images / time_s
  std::vector<PhaseTimes> replica_times;   // per replica (rank order): where its epoch went
  std::string param_digest;    // digest of the parameters after the epoch (equal on every replica)
};

// How a run ended. Written as "completed", "stopped" and "failed" in JSON and CSV; code
// decides on the enum, the words are for files and display only.
enum class RunStatus { Completed, Stopped, Failed };
std::string_view to_string(RunStatus status);
std::optional<RunStatus> parse_run_status(std::string_view text);   // nullopt for anything else

struct RunRecord {
  std::string id;                        // unique, file-name safe: "20261130T063221Z-cpu2-1a2b"
  std::string name;                      // user-editable label
  RunConfig config;
  std::vector<EpochMetrics> epochs;
  double warmup_s = 0;                   // untimed preparation before epoch 1 (plans, graphs)
  CommProfile comm;                      // the gradient all-reduce, measured in the warm-up (GPUs)
  EngineReport engine;                   // what the device engine chose and ran (GPUs; empty on CPUs)
  bool replicas_in_sync = true;
  RunStatus status = RunStatus::Completed;
  std::string error;                     // for RunStatus::Failed

  double mean_epoch_time() const;        // 0 when no epochs
  double best_val_acc() const;
};

std::string make_run_id(const RunConfig& config);

// The devices of a run for people: "cpu:2", or "2 x cpu:1" for 2 processes with cpu:1 each.
std::string devices_label(const RunConfig& config);

nlohmann::json to_json(const RunRecord& record);
RunRecord run_record_from_json(const nlohmann::json& j);   // throws DataError on missing/mistyped fields
// The parts, for streams that carry them one by one (trainer/progress_events.h).
nlohmann::json to_json(const RunConfig& config);
RunConfig run_config_from_json(const nlohmann::json& j);   // throws DataError
nlohmann::json to_json(const EpochMetrics& epoch);
EpochMetrics epoch_metrics_from_json(const nlohmann::json& j);   // throws DataError
nlohmann::json to_json(const PhaseTimes& times);
PhaseTimes phase_times_from_json(const nlohmann::json& j);       // throws DataError

void write_run_json(const RunRecord& record, const std::filesystem::path& file);  // atomic
RunRecord read_run_json(const std::filesystem::path& file);                       // throws DataError
// A record's JSON text (what read_run_json reads from the file; the fuzz target's entry point).
RunRecord parse_run_record(std::string_view text);                                 // throws DataError

// One row per run x epoch, with the run's configuration columns.
std::string runs_to_csv(std::span<const RunRecord> runs);
void write_runs_csv(std::span<const RunRecord> runs, const std::filesystem::path& file);  // atomic

}  // namespace mb

// The scaling predictor in the window: this machine's calibration (core/experiment/calibrate.h,
// kept as calibration.json beside the history), the predictions for the settings of the run on
// display (core/experiment/scaling_model.h), the chart of predicted epoch time against replicas
// with the history's measured runs as points, and the predicted epoch of each run on display
// for the comparison card. Pure functions of their inputs, so the tests can check the points.
#pragma once
#include <QString>

#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "charts/chart_content.h"
#include "experiment/scaling_model.h"
#include "model/model_spec.h"
#include "records/run_record.h"

namespace mb {

// A calibration of this machine as the workbench keeps it: what was measured, with which CPU
// kernels, when and on which CPU (a history folder copied to another machine says so).
struct MachineCalibration {
  Calibration calibration;
  Backend backend = Backend::OneDnn;   // the kernels measured
  std::string measured_at;    // ISO 8601 UTC
  std::string cpu_model;
};

// {"calibration", "backend", "measured_at", "cpu_model"} and, when given, "predictions" (what
// mirrorbench-cli scaling --json writes, plus the workbench's fields).
nlohmann::json to_json(const MachineCalibration& calibration, const std::vector<Prediction>* predictions = nullptr);
MachineCalibration machine_calibration_from_json(const nlohmann::json& j);   // throws DataError
void save_machine_calibration(const std::filesystem::path& file, const MachineCalibration& calibration);   // atomic; throws
// nullopt without a file; a file that cannot be read is nullopt with *warning.
std::optional<MachineCalibration> load_machine_calibration(const std::filesystem::path& file, std::string* warning);

// What the predictions are for: the settings of the run on display (the classic task's without
// one). `batch` is the global batch in global mode and the per-replica batch in per-replica mode,
// as mirrorbench-cli scaling --batch.
struct PredictionScope {
  int64_t batch = 128;
  int64_t train_size = 60000;
  int max_replicas = 8;
  double link_gbps = 0;       // > 0: replicas beyond this machine on more machines over this link
  // The run on display's model and scenario (simulated link, balanced shares or lock-step,
  // simulated straggler), which the predictor models too.
  ModelSpec model;
  Scenario scenario;
};

// The run's batch in the predictor's terms, and whether it ran in per-replica mode.
int64_t predictor_batch(const RunConfig& config);
bool per_replica_mode(const RunConfig& config);

PredictionScope prediction_scope(const RunConfig* on_display, const MachineCalibration* calibration,
                                 std::span<const RunRecord> history, double link_gbps);
// predict_scaling for the scope, with the calibration's epoch set to the scope's training images.
std::vector<Prediction> predictions_for(const MachineCalibration& calibration, const PredictionScope& scope);

// Why the calibration says nothing about a run (GPUs, other kernels); empty when it does.
QString prediction_mismatch(const MachineCalibration& calibration, const RunConfig& config);
// The run's predicted epoch (ShownRun::predicted), or nullopt with *why_not.
std::optional<PredictedEpoch> predicted_epoch(const MachineCalibration& calibration, const RunConfig& config,
                                              double link_gbps, QString* why_not = nullptr);
// The model a calibration timed: its canonical text (the key of the panel's calibrations).
std::string calibrated_model(const MachineCalibration& calibration);
// This machine's calibration of a model (by name), or nullptr.
using CalibrationLookup = std::function<const MachineCalibration*(const std::string& model)>;
// Fills ShownRun::predicted / no_prediction of every run from the calibration of its model
// (nothing for a model without one).
void add_predictions(std::vector<ShownRun>& runs, const CalibrationLookup& calibration_of, double link_gbps);
// The same with one calibration for every run (the runs of other models say why not).
void add_predictions(std::vector<ShownRun>& runs, const MachineCalibration* calibration, double link_gbps);

// Whether a stored run was measured with the scope's settings (and so belongs on its chart).
bool measured_in_scope(const RunRecord& run, const PredictionScope& scope, const MachineCalibration* calibration);

// The chart: predicted epoch time against replicas in both modes, solid on this machine and
// dashed beyond it (labelled with the model's note), the history's completed runs of the same
// settings as points, the run on display as a larger point, its predicted-vs-measured headline.
// Series ids: "predicted/global", "predicted/global-beyond", "predicted/per-replica",
// "predicted/per-replica-beyond", "measured/global", "measured/per-replica", "measured/on-display".
ChartContent build_prediction_chart(const MachineCalibration* calibration, const PredictionScope& scope,
                                    std::span<const RunRecord> history, const ShownRun* on_display);

}  // namespace mb

// The scaling predictor's model: from a calibration measured on this machine (what one
// replica's step costs at a given per-replica batch when k replicas compute in lock-step, and
// what the gradient all-reduce costs among n ranks), predict epoch time, speedup, scaling
// efficiency and communication share for 1..N replicas, in global-batch and per-replica-batch
// mode, and for several machines joined by a network link of a given bandwidth and latency
// (either as many machines as the replicas need, or a given number of them). Pure
// arithmetic (tested on synthetic calibrations with known answers); calibrate.h measures.
//
// Per step:  t(n) = compute_n(b) + allreduce_n(G) + exchange_n
//   compute_n(b)   lock-step compute of n replicas at per-replica batch b = ceil(global / n):
//                  fitted c0 + c1 * b at each measured concurrency (it holds the cost of the
//                  slowest of n replicas, i.e. waiting, and of sharing memory bandwidth)
//   allreduce_n(G) alpha_n + beta_n * G for the gradient's G bytes (alpha-beta fit of a size
//                  sweep among n ranks, as nccl-tests measures it); between M machines a ring
//                  over the link: 2 (M-1) alpha_link + 2 (M-1) / M * G / bandwidth
//   exchange_n     the per-step statistics exchange (a small all-gather: its alpha; between
//                  machines 2 alpha_link more)
// Machines: with `machines` = 0 a machine holds `cores` replicas and replicas beyond them go
// to more machines (when a link is given); with `machines` = M the n replicas are spread over
// min(M, n) machines, ceil(n / M) each, so two hosts of one replica each are a ring of two
// machines, not one machine of two.
// Balanced shares (`balanced`): compute_n is when every replica finishes its share at once.
// With replica i's own fit t_i(b) = a_i + c_i b at that concurrency, shares b_i with
// t_i(b_i) = T and sum b_i = B give T = (B + sum a_i / c_i) / sum 1 / c_i: the replicas'
// throughputs add, where lock-step waits for the slowest at B / n. Both keep the waiting that
// step-to-step variation causes (the calibrated pace less the slowest replica's own time at
// B / n): balancing follows average speeds, not each step's hiccups. A simulated straggler
// (the scenario's straggler) scales its replica's fit in both modes; lock-step keeps the
// waiting its calibration measured on top of the slowest replica's own time.
// Epoch: steps * t(n), steps = ceil(train_size / global).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "config/scenario.h"
#include "util/bandwidth.h"

namespace mb {

struct ComputePoint {
  int concurrent = 1;    // replicas computing at once, in lock-step
  int64_t batch = 0;     // per replica
  double step_s = 0;     // one lock-step step: forward, backward, optimizer (the slowest replica)
  // Each replica's own compute per step, without waiting (median rounds): the speeds
  // balanced shares follow. Empty in calibrations made before: every replica at step_s.
  std::vector<double> replica_s;
  // The optimizer's part of step_s (Adam, replica 0, median rounds): what gradient accumulation
  // pays once per K steps. 0 in calibrations made before (then no saving is predicted).
  double optimizer_s = 0;
};

struct AllReducePoint {
  int ranks = 2;
  double bytes = 0;
  double seconds = 0;    // one all-reduce, mean
  double algbw_gbs() const { return all_reduce_bandwidth(bytes, seconds, ranks).algbw_gbs; }
  double busbw_gbs() const { return all_reduce_bandwidth(bytes, seconds, ranks).busbw_gbs; }
};

// PowerSGD's own arithmetic for one step (the error feedback, P = M Q, Gram-Schmidt,
// Q = M^T P^, the decode and the new error), per replica, with `concurrent` replicas doing it
// at once: a few passes over every compressed matrix, so memory-bound, and replicas at once
// share the bandwidth. The two exchanges are the all-reduce sweep's.
struct CodecPoint {
  int rank = 1;
  int concurrent = 1;
  double seconds = 0;
};

// One pass adding the gradient into gradient accumulation's window sum (what each micro-batch
// pays, ReplicaEngine::accumulate), per replica with `concurrent` replicas at once.
struct GradientPassPoint {
  int concurrent = 1;
  double seconds = 0;
};

struct Calibration;
// The canonical text of the model a calibration timed: its `model`, or when that is empty (a
// calibration written before models were layer lists, or made in code) the reference family's
// model with its gradient's size; "" when none has it.
std::string timed_model(const Calibration& c);

struct Calibration {
  std::string device;              // "cpu (oneDNN)"
  std::string communicator;        // "threads"
  int cores = 1;                   // replicas this machine can run at once (physical cores / GPUs)
  int64_t train_size = 60000;      // images per epoch
  std::string model;               // the model timed: its canonical text (model/model_text.h)
  double gradient_bytes = 0;       // the all-reduce's message (the model's parameters)
  std::vector<ComputePoint> compute;
  std::vector<AllReducePoint> allreduce;
  std::vector<CodecPoint> powersgd;    // empty in calibrations made before (codec not predicted)
  std::vector<GradientPassPoint> gradient_pass;   // empty in calibrations made before
};

// How the batch follows the replica count: a fixed global batch split across the replicas,
// or a fixed batch per replica (the global batch grows with them).
enum class BatchMode { Global, PerReplica };
inline constexpr BatchMode kBatchModes[] = {BatchMode::Global, BatchMode::PerReplica};
const char* to_string(BatchMode mode);   // "global" | "per-replica": the JSON's and CSV's words

struct PredictOptions {
  int max_replicas = 8;
  int64_t batch = 128;             // global batch (global mode) or per replica (per-replica mode)
  double link_gbps = 0;            // > 0: replicas beyond `cores` on more machines over this link
  double link_latency_s = 20e-6;   // per message on that link
  int machines = 0;                // > 0: the replicas on this many machines (needs link_gbps when > 1)
  // The run's scenario, as the trainer runs it: a simulated link (the all-reduce among one
  // machine's replicas lasts at least a ring's over it), balanced shares (measured or replayed:
  // shares follow each replica's speed), a simulated straggler (its replica's fit scaled).
  Scenario scenario;
};

struct Prediction {
  int replicas = 1;
  BatchMode mode = BatchMode::Global;
  int machines = 1;
  int64_t global_batch = 0, per_replica_batch = 0;
  double step_s = 0, compute_s = 0, comm_s = 0;   // per step
  double epoch_s = 0;
  double speedup = 1, efficiency = 1, comm_share = 0;
  bool beyond_machine = false;     // more replicas than this machine runs at once, or more machines
  std::string note;                // why a prediction is an extrapolation
};

// Fits and evaluates the model (see above). Throws ConfigError when the calibration lacks
// what a prediction needs (no single-replica compute point, no all-reduce sweep for n > 1).
std::vector<Prediction> predict_scaling(const Calibration& calibration, const PredictOptions& options);

// Pieces of the model, exposed for tests and the GUI.
struct LinearFit {
  double a = 0, b = 0;   // y = a + b x
  double at(double x) const { return a + b * x; }
};
LinearFit fit_line(const std::vector<double>& x, const std::vector<double>& y);   // least squares
double predicted_compute_s(const Calibration& c, int replicas, int64_t per_replica_batch);
// The compute of one step of `global_batch` over `replicas` (per_machine of them at once on
// each machine), lock-step or balanced, with the options' straggler (see above).
double predicted_step_compute_s(const Calibration& c, const PredictOptions& o, int replicas, int per_machine,
                                int64_t global_batch);
double predicted_allreduce_s(const Calibration& c, int ranks, double bytes);
// The optimizer's time per step with `concurrent` replicas at once (the mean over the measured
// batches at the nearest concurrency: Adam does not depend on the batch); 0 when not measured.
double predicted_optimizer_s(const Calibration& c, int concurrent);
// One gradient pass of accumulation at the nearest measured concurrency; 0 when not measured.
double predicted_gradient_pass_s(const Calibration& c, int concurrent);
// PowerSGD's arithmetic per step at `rank` with `concurrent` replicas at once: a line in the rank
// through the calibration's points at the nearest concurrency; nullopt when it has none.
std::optional<double> predicted_powersgd_codec_s(const Calibration& c, int rank, int concurrent);

nlohmann::json to_json(const Calibration& c);
// What to_json wrote (mirrorbench-cli scaling --json's "calibration", the workbench's saved
// calibration). Throws DataError for missing or mistyped fields.
Calibration calibration_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Prediction& p);
std::string predictions_csv(const std::vector<Prediction>& predictions);

}  // namespace mb

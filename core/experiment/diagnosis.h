// What bounds a run of several replicas, from its measurements rather than a guess: the
// shares of compute, communication and waiting in the replicas' time (the time categories of
// util/phase_times.h); which replicas did not have their core while they computed (each
// thread's CPU time against its compute's wall time: another program, or the window itself,
// took it - which a slower device cannot be told from by waiting alone); the part of a step's
// compute that does not shrink with the per-replica batch (fitted at two batch sizes: the
// machine's calibration at the run's concurrency, else the run and its baseline), with the
// optimizer's measured part of it; and whether the run's own epochs or its baseline are too
// noisy to read. Qt-free, so the window's card and mirrorbench-cli compare say the same.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "experiment/scaling_model.h"
#include "records/run_record.h"

namespace mb {

enum class Bound {
  None,            // one replica, or no breakdown: nothing to say
  Deprived,        // waiting for replicas that lost their core (not a slower device)
  Input,           // waiting for the input pipeline: loading, not the devices, sets the pace
  FixedCost,       // each replica's step is dominated by work that does not shrink with its share
  Communication,   // exchanging the gradient takes more of the replicas' time than computing it
  Waiting,         // waiting for the slowest replica, which had its core: a slower device (or a straggler)
  Compute,         // computing dominates: more replicas help while each keeps enough of the batch
};

// A replica whose thread had its core only part of the time it computed.
struct DeprivedReplica {
  int replica = 0;
  double cpu_share = 1;     // its CPU time / its compute's wall time
  double lost_s = 0;        // over the epoch
};

// Each replica's step compute as a + b x batch-per-replica, at the run's concurrency.
struct StepCostSplit {
  double fixed_s = 0;       // a: per step, whatever the share (the optimizer, reading the weights, ...)
  double per_sample_s = 0;  // b
  double optimizer_s = 0;   // the optimizer's measured part of a, per step
  double fixed_share = 0;   // a / (a + b x the run's per-replica batch)
  std::string source;       // "the machine's calibration" or "this run and its baseline"
};

struct Diagnosis {
  Bound bound = Bound::None;
  double compute_share = 0, communication_share = 0, waiting_share = 0;   // of all replicas' time
  double input_share = 0;                  // waiting for input, of all replicas' time
  std::vector<DeprivedReplica> deprived;   // the simulated straggler is never listed (it sleeps on purpose)
  bool cpu_measured = false;               // the record has the replicas' CPU time (schema 5)
  std::optional<StepCostSplit> split;
  double epoch_spread = 0;                 // (slowest - fastest) / median of epochs 2..n (1..n for <= 2)
  std::optional<double> baseline_drift;    // the baseline against the previous one of its settings: +0.25 = 25 % slower

  // Thresholds: what the card and the CLI call deprived, dominated, noisy.
  static constexpr double kDeprivedBelow = 0.90;   // CPU time under 90 % of the compute's wall time
  static constexpr double kFixedBound = 0.40;      // a fixed part of 40 % of the step or more bounds it
  static constexpr double kNoisySpread = 0.15;     // epochs more than 15 % apart
  static constexpr double kDriftNoted = 0.20;      // a baseline 20 % off the previous one
  static constexpr double kInputBound = 0.25;      // waiting for input 25 % of the time or more bounds it
};

// `calibration` (may be null): this machine's, for the run's model and kernels; `previous_baseline`
// (may be null): the baseline of the same settings before `baseline`, to flag a drifting one.
Diagnosis diagnose(const RunRecord& run, const RunRecord* baseline, const Calibration* calibration,
                   const RunRecord* previous_baseline = nullptr);

// One paragraph for people, naming the cause and the remedy that fits ("Deprived: replica 1
// had its core 78 % of the time it computed ..."), plain text; empty for Bound::None. The
// window's card and mirrorbench-cli compare print it.
std::string diagnosis_text(const Diagnosis& d, const RunRecord& run);
// Short words for a flagged noisy run or baseline, empty when neither.
std::string noise_text(const Diagnosis& d);

}  // namespace mb

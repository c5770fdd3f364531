// Balanced shares (--balance): each replica's share of the global batch follows its measured
// compute speed, so lock-step training stops running at the slowest replica's pace. The pure
// rule, with no trainer, clock or communicator in it: every rank feeds it the same gathered
// step reports in the same order, so every rank (threads and processes alike) computes the
// very same shares without a message of its own, as the stop decision is taken.
#pragma once
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "config/run_config.h"

namespace mb {

// What one replica measured over the steps since the last report.
struct ShareSample {
  double compute_s = 0;     // forward + backward: grows with the samples
  double optimizer_s = 0;   // Adam: the same whatever the share
  int64_t samples = 0;      // samples it computed
  int64_t steps = 0;        // steps it took
};

struct BalanceRule {
  int64_t global_batch = 0;
  int replicas = 1;
  int64_t quantum = 1;       // shares are multiples of it (the largest absorbs the rest): few step shapes
  int64_t min_share = 1;     // every replica keeps a speed sample
  // Measured on a shared 2-vCPU host, where a replica's speed jumps with the neighbours' load:
  // 8 steps / 0.3 / 3 % flapped between neighbouring quanta, and a running average (weight
  // 0.2) let a neighbour's burst of a few reports move an equal pair to 72/56; these settle.
  // A window of 7 reports (56 steps) still followed the vCPUs' half-second slowdowns on an
  // equal pair; 15 (120 steps) follows fewer and reaches a lasting difference as soon.
  int change_every = 16;     // steps between two decisions, at least
  int window = 15;           // a replica's speed: the median of its last `window` reports
  // A change must shorten the predicted step by this fraction. The two vCPUs (4.31 s
  // against 3.86 s an epoch, 12 % apart) gain 4.8 % at 68/60 of 128; equal replicas would need
  // a measured difference over 9 % to reach it (their medians of 8-step reports differ by
  // 1-2 % on a quiet host).
  double min_gain = 0.03;
  // A change is taken only when two decisions in a row, change_every steps apart, propose it,
  // the same way for every replica: a lasting speed difference, not a burst. Then the shares
  // go all the way to the target (the median and the confirmation are the damping).

  // The rule for a run: quantum global / (16 x replicas), at least 1; the minimum share one quantum.
  static BalanceRule for_run(int64_t global_batch, int replicas);
  // The largest share the rule can give (what the engines' plans are built for).
  int64_t max_share() const { return global_batch - int64_t(replicas - 1) * min_share; }
};

class ShareBalancer {
 public:
  explicit ShareBalancer(const BalanceRule& rule);

  const BalanceRule& rule() const { return rule_; }
  // Each replica's share of a full global batch (sums to global_batch).
  const std::vector<int64_t>& shares() const { return shares_; }

  // One report of every replica (rank order). True when the shares changed: they apply from
  // the next step.
  bool observe(std::span<const ShareSample> all);

 private:
  std::vector<int64_t> target() const;
  double predicted_step_s(const std::vector<int64_t>& shares) const;
  bool same_way(const std::vector<int64_t>& a, const std::vector<int64_t>& b) const;
  void estimate();

  BalanceRule rule_;
  std::vector<int64_t> shares_;
  std::vector<std::deque<double>> per_sample_seen_, fixed_seen_;   // each replica's last reports
  std::vector<double> per_sample_s_, fixed_s_;   // their medians (0: none yet)
  std::vector<int64_t> proposed_;                // a change waiting for its confirmation (empty: none)
  int64_t steps_since_decision_ = 0;             // since the last change or proposal
  bool fresh_ = true;                            // the next report is the first after a change
};

// The shares of an even split (the lock-step split, replica_share_begin's).
std::vector<int64_t> even_shares(int64_t global_batch, int replicas);

// Rounds real shares to multiples of rule.quantum, each at least rule.min_share, summing to
// rule.global_batch (largest remainders first, ties to the lower rank; the rest of the sum to
// the largest share).
std::vector<int64_t> round_shares(std::span<const double> real, const BalanceRule& rule);

// Replica `replica`'s first sample in a step of `batch` samples, given the shares of a full
// global batch: the shares themselves for a full batch, scaled down (floor of the running sum)
// for a shorter last batch, where a replica may get none.
int64_t share_begin(std::span<const int64_t> shares, int64_t global_batch, int64_t batch, int replica);

// The shares in effect at run step `step` (counting from 0 over the run) of a recorded
// schedule (ordered by step, the first at step 0).
const std::vector<int64_t>& shares_at(std::span<const ShareChange> schedule, int64_t step);

}  // namespace mb

// Which samples of each global batch each replica takes: lock-step's even split (shares differ
// by at most one sample, the first batch % n replicas taking one more), balanced shares that
// follow each replica's measured speed (share_balancer.h), or the shares of a recorded run
// replayed step by step (--shares-from). Every rank holds one and gives it the same gathered
// reports, so every rank takes the same shares at the same step without a message of its own;
// each step, the ranks also check that the shares they took tile the batch (a disagreement
// would sum a wrong gradient that the in-sync check cannot see).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "config/run_config.h"
#include "trainer/share_balancer.h"

namespace mb {

// The lock-step split: replica r of n gets [begin(r), begin(r+1)) of a batch of size b.
int64_t replica_share_begin(int64_t batch, int replicas, int replica);

class StepShares {
 public:
  // `replay`: the recorded changes of --shares-from (empty: measure, when balanced).
  StepShares(const RunConfig& config, std::vector<ShareChange> replay);

  bool balanced() const { return balanced_; }
  bool replaying() const { return !replay_.empty(); }
  // The largest share a replica may get: what its engine's plans are built for.
  int64_t max_share() const;
  // Balanced: the shares of a full batch from step 0 on (the record's first change).
  std::optional<ShareChange> start() const;

  // Replica r's first sample in a step of `batch` samples (a short last batch is split in
  // proportion: a replica may get none).
  int64_t begin(int64_t batch, int replica) const;

  // Before run step `step` (from 0): a replayed change that takes effect at it.
  std::optional<ShareChange> follow_replay(int64_t step);
  // After a report of every replica (rank order) covering `steps` steps, the last of which was
  // run step `step` - 1: a measured change that applies from `step` on. Never in the last
  // step of the run (no step would take it).
  std::optional<ShareChange> observe(std::span<const ShareSample> report, int64_t step, int64_t total_steps);

  // The ranks' shares of a step of `batch` samples, as each took them (rank order): they must
  // start at 0, follow each other and cover the batch. Throws Error naming the gap.
  static void check_tile(std::span<const int64_t> begins, std::span<const int64_t> counts, int64_t batch);

 private:
  const int replicas_;
  const int64_t global_;
  const bool balanced_;
  std::vector<ShareChange> replay_;
  ShareBalancer balancer_;
  std::vector<int64_t> shares_;   // balanced: the shares of a full global batch in effect
};

}  // namespace mb

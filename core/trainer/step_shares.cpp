// The shares of every step (see step_shares.h).
#include "trainer/step_shares.h"

#include <algorithm>

#include "util/error.h"

namespace mb {

int64_t replica_share_begin(int64_t batch, int replicas, int replica) {
  const int64_t base = batch / replicas, extra = batch % replicas;
  return replica * base + std::min<int64_t>(replica, extra);
}

StepShares::StepShares(const RunConfig& config, std::vector<ShareChange> replay)
    : replicas_(config.replicas), global_(config.global_batch), balanced_(config.scenario.balanced()),
      replay_(std::move(replay)), balancer_(BalanceRule::for_run(config.global_batch, config.replicas)) {
  if (balanced_) shares_ = replaying() ? shares_at(replay_, 0) : balancer_.shares();
}

int64_t StepShares::max_share() const {
  // Balanced: the largest share the rule can give; lock-step: ceil(global / n).
  return balanced_ ? balancer_.rule().max_share() : (global_ + replicas_ - 1) / replicas_;
}

std::optional<ShareChange> StepShares::start() const {
  if (!balanced_) return std::nullopt;
  return ShareChange{0, shares_};
}

int64_t StepShares::begin(int64_t batch, int replica) const {
  if (!balanced_) return replica_share_begin(batch, replicas_, replica);
  return share_begin(shares_, global_, batch, replica);
}

std::optional<ShareChange> StepShares::follow_replay(int64_t step) {
  if (!replaying()) return std::nullopt;
  const std::vector<int64_t>& now = shares_at(replay_, step);
  if (now == shares_) return std::nullopt;
  shares_ = now;
  return ShareChange{step, shares_};
}

std::optional<ShareChange> StepShares::observe(std::span<const ShareSample> report, int64_t step, int64_t total_steps) {
  if (!balanced_ || replaying() || step >= total_steps) return std::nullopt;
  if (!balancer_.observe(report)) return std::nullopt;
  shares_ = balancer_.shares();
  return ShareChange{step, shares_};
}

void StepShares::check_tile(std::span<const int64_t> begins, std::span<const int64_t> counts, int64_t batch) {
  int64_t end = 0;
  for (std::size_t r = 0; r < begins.size(); ++r) {
    MB_CHECK(begins[r] == end && counts[r] >= 0, Error,
             "balanced shares: the replicas disagree on the shares of a step of {} samples (one began at {}, "
             "expected {})", batch, begins[r], end);
    end += counts[r];
  }
  MB_CHECK(end == batch, Error, "balanced shares: the replicas' shares cover {} of the step's {} samples", end, batch);
}

}  // namespace mb

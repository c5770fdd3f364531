// The balanced-shares rule (see share_balancer.h). Only integer arithmetic and doubles
// computed in one fixed order from the gathered reports, so every rank gets the same bits.
#include "trainer/share_balancer.h"

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace mb {

BalanceRule BalanceRule::for_run(int64_t global_batch, int replicas) {
  BalanceRule r;
  r.global_batch = global_batch;
  r.replicas = replicas;
  // Sixteen quanta per replica on average: shares that follow the speeds to within ~1/16 of an
  // even share, with at most 16n distinct step shapes (each a oneDNN plan built on first use).
  // Eighth-shares could not follow the 12 % between the two vCPUs: of 128, 64/64 and
  // 72/56 were the nearest splits, and the second overshoots (the fast replica then waits).
  r.quantum = std::max<int64_t>(1, global_batch / (16 * int64_t(replicas)));
  r.min_share = r.quantum;
  return r;
}

std::vector<int64_t> even_shares(int64_t global_batch, int replicas) {
  std::vector<int64_t> s(std::size_t(replicas), global_batch / replicas);
  for (int r = 0; r < global_batch % replicas; ++r) ++s[std::size_t(r)];
  return s;
}

std::vector<int64_t> round_shares(std::span<const double> real, const BalanceRule& rule) {
  const std::size_t n = real.size();
  const int64_t q = rule.quantum;
  std::vector<int64_t> s(n);
  for (std::size_t r = 0; r < n; ++r)
    s[r] = std::max(rule.min_share, int64_t(std::max(0.0, real[r]) / double(q)) * q);
  int64_t rest = rule.global_batch - std::accumulate(s.begin(), s.end(), int64_t{0});
  // Too much (minimum shares pushed the sum over): take quanta from the largest shares.
  while (rest < 0) {
    std::size_t big = 0;
    for (std::size_t r = 1; r < n; ++r)
      if (s[r] > s[big]) big = r;
    const int64_t take = std::min({q, -rest, s[big] - rule.min_share});
    MB_CHECK(take > 0, Error, "balanced shares: {} replicas cannot each keep {} of a batch of {}", n, rule.min_share,
             rule.global_batch);
    s[big] -= take;
    rest += take;
  }
  // Whole quanta to the largest remainders (ties: the lower rank), then the rest to the largest share.
  std::vector<std::size_t> by_remainder(n);
  std::iota(by_remainder.begin(), by_remainder.end(), std::size_t{0});
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [&](std::size_t a, std::size_t b) { return real[a] - double(s[a]) > real[b] - double(s[b]); });
  for (std::size_t k = 0; rest >= q; k = (k + 1) % n, rest -= q) s[by_remainder[k]] += q;
  s[std::size_t(std::max_element(s.begin(), s.end()) - s.begin())] += rest;
  return s;
}

int64_t share_begin(std::span<const int64_t> shares, int64_t global_batch, int64_t batch, int replica) {
  const int64_t prefix = std::accumulate(shares.begin(), shares.begin() + replica, int64_t{0});
  return batch == global_batch ? prefix : batch * prefix / global_batch;
}

const std::vector<int64_t>& shares_at(std::span<const ShareChange> schedule, int64_t step) {
  MB_CHECK(!schedule.empty() && schedule.front().step == 0, Error, "a share schedule starts at step 0");
  const auto after = std::upper_bound(schedule.begin(), schedule.end(), step,
                                      [](int64_t s, const ShareChange& c) { return s < c.step; });
  return std::prev(after)->shares;
}

ShareBalancer::ShareBalancer(const BalanceRule& rule)
    : rule_(rule), shares_(even_shares(rule.global_batch, rule.replicas)),
      per_sample_seen_(std::size_t(rule.replicas)), fixed_seen_(std::size_t(rule.replicas)),
      per_sample_s_(std::size_t(rule.replicas), 0.0), fixed_s_(std::size_t(rule.replicas), 0.0) {}

namespace {

void remember(std::deque<double>& seen, double x, int window) {
  seen.push_back(x);
  while (seen.size() > std::size_t(window)) seen.pop_front();
}

double median(const std::deque<double>& seen) {
  if (seen.empty()) return 0;
  std::vector<double> v(seen.begin(), seen.end());
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

void ShareBalancer::estimate() {
  for (std::size_t r = 0; r < shares_.size(); ++r) {
    per_sample_s_[r] = median(per_sample_seen_[r]);
    fixed_s_[r] = median(fixed_seen_[r]);
  }
}

bool ShareBalancer::observe(std::span<const ShareSample> all) {
  MB_CHECK(all.size() == shares_.size(), Error, "balanced shares: {} reports for {} replicas", all.size(),
           shares_.size());
  // The first report after a change is left out: a new share may have built its plan then.
  if (!fresh_)
    for (std::size_t r = 0; r < all.size(); ++r) {
      const ShareSample& x = all[r];
      if (x.samples <= 0 || x.steps <= 0) continue;   // an empty share says nothing of the speed
      remember(per_sample_seen_[r], x.compute_s / double(x.samples), rule_.window);
      remember(fixed_seen_[r], x.optimizer_s / double(x.steps), rule_.window);
    }
  fresh_ = false;
  steps_since_decision_ += all.front().steps;
  if (steps_since_decision_ < rule_.change_every) return false;
  estimate();
  if (std::any_of(per_sample_s_.begin(), per_sample_s_.end(), [](double c) { return !(c > 0); })) return false;
  std::vector<int64_t> next = target();
  if (next == shares_ || !(predicted_step_s(next) < (1.0 - rule_.min_gain) * predicted_step_s(shares_))) {
    proposed_.clear();   // the difference did not last
    return false;
  }
  steps_since_decision_ = 0;
  if (proposed_.empty() || !same_way(proposed_, next)) {
    proposed_ = std::move(next);   // to be confirmed change_every steps later
    return false;
  }
  shares_ = std::move(next);
  proposed_.clear();
  fresh_ = true;
  return true;
}

bool ShareBalancer::same_way(const std::vector<int64_t>& a, const std::vector<int64_t>& b) const {
  const auto sign = [](int64_t x) { return (x > 0) - (x < 0); };
  for (std::size_t r = 0; r < shares_.size(); ++r)
    if (sign(a[r] - shares_[r]) != sign(b[r] - shares_[r])) return false;
  return true;
}

// Shares that would end every replica's compute at once (o_r + c_r s_r = T, summing to the
// global batch), rounded.
std::vector<int64_t> ShareBalancer::target() const {
  const std::size_t n = shares_.size();
  double inverse_sum = 0, fixed_over = 0;
  for (std::size_t r = 0; r < n; ++r) {
    inverse_sum += 1.0 / per_sample_s_[r];
    fixed_over += fixed_s_[r] / per_sample_s_[r];
  }
  const double t = (double(rule_.global_batch) + fixed_over) / inverse_sum;
  std::vector<double> ideal(n);
  for (std::size_t r = 0; r < n; ++r)
    ideal[r] = std::max(double(rule_.min_share), (t - fixed_s_[r]) / per_sample_s_[r]);
  return round_shares(ideal, rule_);
}

double ShareBalancer::predicted_step_s(const std::vector<int64_t>& shares) const {
  double slowest = 0;
  for (std::size_t r = 0; r < shares.size(); ++r)
    slowest = std::max(slowest, fixed_s_[r] + per_sample_s_[r] * double(shares[r]));
  return slowest;
}

}  // namespace mb

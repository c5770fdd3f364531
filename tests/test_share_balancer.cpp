// The balanced-shares rule (trainer/share_balancer.h) without a trainer: a fake clock (each
// replica's seconds per sample, made up) shows the shares converge to the speed ratio, stay
// put once there, keep every replica its minimum share, and round to few step shapes; the
// split of a short last batch and the replayed schedule follow their definitions exactly.
#include <QtTest>

#include <numeric>
#include <set>

#include "test_support.h"
#include "trainer/share_balancer.h"
#include "util/random.h"

using namespace mb;

namespace {

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

// Replica r computes its share in fixed_s + share x per_sample_s[r] (x a noise factor, and
// `burst_factor` for replica 1 during a burst); `reports` reports of `steps_per_report` steps
// each are fed to the balancer. Returns the number of changes.
struct FakeClock {
  std::vector<double> per_sample_s;
  double fixed_s = 1e-3;
  double noise = 0;   // relative, uniform in [-noise, noise]
  int steps_per_report = 1;
  int burst_every = 0, burst_reports = 0;   // replica 1 slowed for burst_reports of every burst_every reports
  double burst_factor = 1;
  SplitMix64 rng{42};
  int reported = 0;

  int run(ShareBalancer& b, int reports) {
    int changes = 0;
    for (int k = 0; k < reports; ++k, ++reported) {
      const bool burst = burst_every > 0 && reported % burst_every >= burst_every - burst_reports;
      std::vector<ShareSample> all;
      for (std::size_t r = 0; r < per_sample_s.size(); ++r) {
        const double u = double(rng.next() >> 11) / double(1ull << 53);
        const double x = (1 + noise * (2 * u - 1)) * (burst && r == 1 ? burst_factor : 1.0);
        const int64_t share = b.shares()[r];
        all.push_back({double(share) * per_sample_s[r] * x * steps_per_report, fixed_s * steps_per_report, share *
                       steps_per_report, steps_per_report});
      }
      changes += b.observe(all) ? 1 : 0;
    }
    return changes;
  }
};

}  // namespace

class TestShareBalancer : public QObject {
  Q_OBJECT
 private slots:
  void the_rule_of_a_run() {
    const BalanceRule r = BalanceRule::for_run(128, 2);
    QCOMPARE(r.quantum, int64_t(4));
    QCOMPARE(r.min_share, int64_t(4));
    QCOMPARE(r.max_share(), int64_t(124));
    // A batch smaller than 16 per replica: shares of single samples.
    const BalanceRule small = BalanceRule::for_run(5, 3);
    QCOMPARE(small.quantum, int64_t(1));
    QCOMPARE(small.max_share(), int64_t(3));
    QVERIFY(even_shares(128, 3) == std::vector<int64_t>({43, 43, 42}));
  }

  void rounding_keeps_the_sum_and_the_minimum() {
    const BalanceRule r = BalanceRule::for_run(192, 3);   // quantum 4
    const double a[] = {134.9, 52.0, 5.1};
    const std::vector<int64_t> s = round_shares(a, r);
    QCOMPARE(sum(s), int64_t(192));
    for (const int64_t x : s) QVERIFY(x >= r.min_share);
    QCOMPARE(s[2], r.min_share);
    // Every share but the largest is a whole number of quanta (few distinct step shapes).
    const auto largest = std::max_element(s.begin(), s.end()) - s.begin();
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::ptrdiff_t(i) != largest) QCOMPARE(s[i] % r.quantum, int64_t(0));
    // Minimums pushing the sum over take from the largest.
    const double over[] = {192, 0, 0};
    QVERIFY(round_shares(over, r) == std::vector<int64_t>({184, 4, 4}));
  }

  void shares_converge_to_the_speed_ratio_data() {
    QTest::addColumn<double>("slow");      // replica 1's seconds per sample over replica 0's
    QTest::addColumn<double>("noise");
    QTest::addColumn<int>("want0");        // replica 0's share of 128 at the end
    QTest::newRow("x3") << 3.0 << 0.0 << 96;
    QTest::newRow("x3 noisy") << 3.0 << 0.1 << 96;
    QTest::newRow("equal") << 1.0 << 0.1 << 64;
    QTest::newRow("x1.5") << 1.5 << 0.05 << 77;   // 76.8: within one quantum
  }
  void shares_converge_to_the_speed_ratio() {
    QFETCH(double, slow);
    QFETCH(double, noise);
    QFETCH(int, want0);
    ShareBalancer b(BalanceRule::for_run(128, 2));
    FakeClock clock{{1e-4, slow * 1e-4}};
    clock.noise = noise;
    clock.fixed_s = 0;
    clock.run(b, 200);
    QVERIFY2(std::abs(b.shares()[0] - want0) <= b.rule().quantum,
             qPrintable(QString("shares %1 / %2").arg(b.shares()[0]).arg(b.shares()[1])));
    QCOMPARE(sum(b.shares()), int64_t(128));
    // Settled: 300 more noisy steps change the shares at most twice (no oscillation).
    const int later = clock.run(b, 300);
    QVERIFY2(later <= 2, qPrintable(QString("%1 changes after converging").arg(later)));
  }

  void equal_replicas_keep_the_even_split() {
    ShareBalancer b(BalanceRule::for_run(128, 2));
    FakeClock clock{{1e-4, 1e-4}};
    clock.noise = 0.1;
    QCOMPARE(clock.run(b, 500), 0);
    QVERIFY(b.shares() == even_shares(128, 2));
  }

  void a_burst_is_not_a_speed() {
    // Equal replicas as the CPU engines report them (every 8 steps), replica 1 twice as slow
    // for 3 reports (24 steps) of every 12: a neighbour's burst, not a slower device. A running
    // average moved such a pair to 72 / 56 (the first rule's drift on a shared host).
    ShareBalancer b(BalanceRule::for_run(128, 2));
    FakeClock clock{{1e-4, 1e-4}};
    clock.noise = 0.05;
    clock.steps_per_report = 8;
    clock.burst_every = 12;
    clock.burst_reports = 3;
    clock.burst_factor = 2;
    QCOMPARE(clock.run(b, 600), 0);
    QVERIFY(b.shares() == even_shares(128, 2));
    // The same slowdown lasting is a speed: the shares follow it (2:1, 85 of 128), soon.
    clock.burst_every = 0;
    clock.per_sample_s = {1e-4, 2e-4};
    clock.run(b, 20);
    QVERIFY2(std::abs(b.shares()[0] - 85) <= b.rule().quantum, qPrintable(QString::number(b.shares()[0])));
  }

  void the_issues_vcpus_are_followed() {
    // The two vCPUs the issue measured: 4.31 s against 3.86 s of compute in one epoch, reported
    // every 8 steps with 2 % noise. The shares that end both together are 128 x 4.31/8.17 =
    // 67.5: 68 / 60. Eighth-shares at a 5 % gain (the previous rule) had no better split than
    // the even one (72 / 56 overshoots) and left the fast replica waiting 10 % of every step.
    FakeClock clock{{1e-4, 1e-4 * 4.31 / 3.86}};
    clock.noise = 0.02;
    clock.steps_per_report = 8;
    clock.fixed_s = 0;
    ShareBalancer b(BalanceRule::for_run(128, 2));
    clock.run(b, 40);
    QVERIFY2(b.shares() == std::vector<int64_t>({68, 60}), qPrintable(QString("shares %1 / %2").arg(b.shares()[0]).arg(b.shares()[1])));
    QVERIFY(clock.run(b, 300) == 0);   // and stay there
    BalanceRule eighths = BalanceRule::for_run(128, 2);
    eighths.quantum = eighths.min_share = 8;
    eighths.min_gain = 0.05;
    ShareBalancer previous(eighths);
    QCOMPARE(clock.run(previous, 340), 0);
  }

  void a_fixed_cost_per_step_is_not_a_speed() {
    // Adam takes as long whatever the share: with fixed costs 2 ms on both and per-sample
    // costs 1:2, the shares that end both together are (G + 0) x 2/3 = 85.3 of 128.
    ShareBalancer b(BalanceRule::for_run(128, 2));
    FakeClock clock{{1e-4, 2e-4}};
    clock.fixed_s = 2e-3;
    clock.run(b, 300);
    QVERIFY2(std::abs(b.shares()[0] - 85) <= b.rule().quantum, qPrintable(QString::number(b.shares()[0])));
  }

  void changes_come_at_most_every_n_steps() {
    ShareBalancer b(BalanceRule::for_run(128, 2));
    FakeClock clock{{1e-4, 5e-4}};
    int last = -1000;
    for (int k = 0; k < 100; ++k)
      if (clock.run(b, 1) == 1) {
        QVERIFY2(k - last >= b.rule().change_every, qPrintable(QString("changes at steps %1 and %2").arg(last).arg(k)));
        last = k;
      }
    QVERIFY(last > 0);
  }

  void a_very_slow_replica_keeps_its_minimum_share() {
    ShareBalancer b(BalanceRule::for_run(64, 3));
    FakeClock clock{{1e-4, 1e-4, 1e-1}};   // replica 2: 1000 x slower
    clock.run(b, 300);
    QCOMPARE(b.shares()[2], b.rule().min_share);
    QCOMPARE(sum(b.shares()), int64_t(64));
    // The distinct shares any replica took stay few: multiples of the quantum.
    QVERIFY(b.shares()[0] > b.rule().min_share && b.shares()[1] > b.rule().min_share);
  }

  void every_rank_computes_the_same_shares() {
    // Fed the same reports, two balancers (two ranks) agree at every step.
    ShareBalancer a(BalanceRule::for_run(96, 3)), b(BalanceRule::for_run(96, 3));
    SplitMix64 rng(3);
    for (int k = 0; k < 300; ++k) {
      std::vector<ShareSample> all;
      for (int r = 0; r < 3; ++r)
        all.push_back({double(a.shares()[std::size_t(r)]) * (1 + r) * 1e-4 * (1 + double(rng.next() % 100) / 500),
                       1e-3, a.shares()[std::size_t(r)], 1});
      QCOMPARE(a.observe(all), b.observe(all));
      QVERIFY(a.shares() == b.shares());
    }
  }

  void a_short_last_batch_is_split_in_proportion() {
    const std::vector<int64_t> shares = {8, 56};
    // The full batch: the shares themselves.
    QCOMPARE(share_begin(shares, 64, 64, 1), int64_t(8));
    QCOMPARE(share_begin(shares, 64, 64, 2), int64_t(64));
    // 4 samples: replica 0's share 4 x 8/64 rounds down to none (an empty share, a zero gradient).
    QCOMPARE(share_begin(shares, 64, 4, 0), int64_t(0));
    QCOMPARE(share_begin(shares, 64, 4, 1), int64_t(0));
    QCOMPARE(share_begin(shares, 64, 4, 2), int64_t(4));
    // Any batch: the ranges tile it.
    for (int64_t b = 1; b <= 64; ++b) {
      QCOMPARE(share_begin(shares, 64, b, 0), int64_t(0));
      QVERIFY(share_begin(shares, 64, b, 1) <= share_begin(shares, 64, b, 2));
      QCOMPARE(share_begin(shares, 64, b, 2), b);
    }
  }

  void a_schedule_gives_the_shares_of_each_step() {
    const std::vector<ShareChange> schedule = {{0, {32, 32}}, {9, {40, 24}}, {30, {48, 16}}};
    QVERIFY(shares_at(schedule, 0) == std::vector<int64_t>({32, 32}));
    QVERIFY(shares_at(schedule, 8) == std::vector<int64_t>({32, 32}));
    QVERIFY(shares_at(schedule, 9) == std::vector<int64_t>({40, 24}));
    QVERIFY(shares_at(schedule, 29) == std::vector<int64_t>({40, 24}));
    QVERIFY(shares_at(schedule, 1000) == std::vector<int64_t>({48, 16}));
  }
};

QTEST_GUILESS_MAIN(TestShareBalancer)
#include "test_share_balancer.moc"

// Tests of the reference Adam (optim/adam.h, Keras form): hand-computed first steps in long
// double, the bias correction, the zero-gradient case, and convergence on a convex problem.
#include <QtTest>

#include <cmath>
#include <vector>

#include "optim/adam.h"
#include "optim/lr_schedule.h"
#include "util/error.h"
#include "util/random.h"
#include "util/tolerance.h"

using namespace mb;

namespace {

// The documented update in long double, for one scalar; betas are the config's floats.
struct ScalarAdam {
  long double w, m = 0, v = 0;
  void step(const AdamConfig& c, int64_t t, long double g) {
    const long double b1 = c.beta1, b2 = c.beta2;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const long double lr_t = c.lr * std::sqrt(1 - std::pow(b2, (long double)t)) / (1 - std::pow(b1, (long double)t));
    w -= lr_t * m / (std::sqrt(v) + c.epsilon);
  }
};

}  // namespace

class TestAdam : public QObject {
  Q_OBJECT

 private slots:
  // Goyal et al.'s gradual warm-up: linear from the base rate to the scaled one over the
  // warm-up's steps, then the target; from zero when nothing is scaled; none: the target.
  void warmup_is_linear_then_flat() {
    const LrWarmup scaled{0.001, 0.004, 4};
    QCOMPARE(scaled.at(1), 0.001 + 0.003 / 4);
    QCOMPARE(scaled.at(2), 0.001 + 0.003 / 2);
    QCOMPARE(scaled.at(4), 0.004);
    QCOMPARE(scaled.at(1000), 0.004);
    const LrWarmup unscaled{0.002, 0.002, 8};
    QCOMPARE(unscaled.at(1), 0.002 / 8);
    QCOMPARE(unscaled.at(4), 0.002 / 2);
    QCOMPARE(unscaled.at(8), 0.002);
    const LrWarmup none{0.001, 0.003, 0};
    QCOMPARE(none.at(1), 0.003);
  }

  void step_size_matches_formula_data() {
    QTest::addColumn<qint64>("step");
    for (qint64 t : {1, 2, 3, 10, 1000, 100000}) QTest::addRow("t=%lld", static_cast<long long>(t)) << t;
  }
  void step_size_matches_formula() {
    QFETCH(qint64, step);
    const AdamConfig cfg;
    const long double b1 = cfg.beta1, b2 = cfg.beta2;
    const long double expected =
        cfg.lr * std::sqrt(1 - std::pow(b2, (long double)step)) / (1 - std::pow(b1, (long double)step));
    const float got = adam_step_size(cfg, step);
    // Computed in double and rounded once to float: within one float rounding of the exact value.
    QVERIFY2(within(got, double(expected), {0, 1.2e-7}),
             qPrintable(QString("got %1, expected %2").arg(got, 0, 'g', 10).arg((double)expected, 0, 'g', 10)));
  }

  void step_size_at_step_one() {
    // lr * sqrt(1 - b2) / (1 - b1) = 1e-3 * sqrt(1e-3) / 0.1 ~ 3.1623e-4 with the Keras defaults
    // (the config's float betas move it in the 6th digit: 0.999f is 0.99900001...).
    const float got = adam_step_size(AdamConfig{}, 1);
    QVERIFY2(within(got, 3.16227766e-4, {1e-8, 0}), qPrintable(QString::number(got, 'g', 10)));
  }

  void first_two_steps_data() {
    QTest::addColumn<float>("w0");
    QTest::addColumn<float>("g1");
    QTest::addColumn<float>("g2");
    QTest::addColumn<float>("lr");
    QTest::addRow("positive") << 0.5f << 0.1f << 0.3f << 1e-3f;
    QTest::addRow("sign change") << -1.25f << 2.0f << -2.0f << 1e-3f;
    // |g| ~ eps / sqrt(1 - b2): the epsilon's placement (outside the correction) shows here.
    QTest::addRow("tiny gradient") << 0.0f << 3e-6f << 1e-6f << 1e-3f;
    QTest::addRow("zero then nonzero") << 3.0f << 0.0f << -0.5f << 1e-2f;
    QTest::addRow("nonzero then zero") << 1.0f << 0.7f << 0.0f << 1e-2f;
    QTest::addRow("large gradient") << 0.25f << 1e4f << 3e3f << 1e-3f;
  }
  void first_two_steps() {
    QFETCH(float, w0);
    QFETCH(float, g1);
    QFETCH(float, g2);
    QFETCH(float, lr);
    AdamConfig cfg;
    cfg.lr = lr;
    std::vector<float> w{w0}, m{0.0f}, v{0.0f};
    ScalarAdam ref{w0};
    const float grads[2] = {g1, g2};
    for (int t = 1; t <= 2; ++t) {
      std::vector<float> g{grads[t - 1]};
      adam_update_reference(cfg, t, w, g, m, v);
      ref.step(cfg, t, grads[t - 1]);
      // Float arithmetic vs long double: a few roundings of w and of the update.
      QVERIFY2(within(w[0], double(ref.w), {1e-5 * lr + 1e-12, 2e-7}), qPrintable(QString("step %1: w %2, expected %3")
                                                               .arg(t)
                                                               .arg(w[0], 0, 'g', 10)
                                                               .arg((double)ref.w, 0, 'g', 10)));
      QVERIFY(within(m[0], double(ref.m), {1e-30, 1e-6}));
      QVERIFY(within(v[0], double(ref.v), {1e-30, 1e-6}));
    }
  }

  void bias_correction_makes_first_update_lr() {
    // With m and v bias-corrected, step 1 moves each weight by lr * g / (|g| + eps / sqrt(1 - b2)),
    // i.e. by lr in the gradient's direction whenever |g| >> 3.2e-6, whatever the gradient scale.
    const AdamConfig cfg;
    const std::vector<float> g{1e-2f, -1e-2f, 0.5f, -3.0f, 40.0f, -1e3f};
    std::vector<float> w(g.size(), 0.0f), m(g.size(), 0.0f), v(g.size(), 0.0f);
    adam_update_reference(cfg, 1, w, g, m, v);
    for (std::size_t i = 0; i < g.size(); ++i) {
      const float expected = g[i] > 0 ? -cfg.lr : cfg.lr;
      QVERIFY2(within(w[i], expected, {1e-3 * cfg.lr, 0}),
               qPrintable(QString("g=%1: moved %2").arg(g[i]).arg(w[i], 0, 'g', 8)));
    }
  }

  void constant_gradient_moves_lr_every_step() {
    // m_hat = g and v_hat = g^2 exactly for a constant g, so every step moves by ~lr.
    const AdamConfig cfg;
    std::vector<float> w{2.0f}, g{0.25f}, m{0.0f}, v{0.0f};
    for (int t = 1; t <= 20; ++t) {
      const float before = w[0];
      adam_update_reference(cfg, t, w, g, m, v);
      QVERIFY2(within(before - w[0], cfg.lr, {2e-3 * cfg.lr, 0}),
               qPrintable(QString("step %1 moved %2").arg(t).arg(before - w[0], 0, 'g', 8)));
    }
  }

  void zero_gradient_leaves_weights_unchanged() {
    const AdamConfig cfg;
    const std::vector<float> w0{0.5f, -2.0f, 0.0f, 1e-8f};
    std::vector<float> w = w0, g(w0.size(), 0.0f), m(w0.size(), 0.0f), v(w0.size(), 0.0f);
    adam_update_reference(cfg, 1, w, g, m, v);
    for (std::size_t i = 0; i < w.size(); ++i) {
      QCOMPARE(w[i], w0[i]);
      QCOMPARE(m[i], 0.0f);
      QCOMPARE(v[i], 0.0f);
    }
  }

  void converges_on_convex_problem() {
    // minimise sum_i (w_i - c_i)^2 from w = 0.
    SplitMix64 rng(42);
    const std::size_t n = 16;
    std::vector<float> c(n), w(n, 0.0f), g(n), m(n, 0.0f), v(n, 0.0f);
    for (auto& ci : c) ci = static_cast<float>(4.0 * rng.next_unit() - 2.0);
    const auto loss = [&] {
      double s = 0;
      for (std::size_t i = 0; i < n; ++i) s += double(w[i] - c[i]) * (w[i] - c[i]);
      return s;
    };
    const double initial = loss();
    AdamConfig cfg;
    cfg.lr = 0.01f;
    for (int t = 1; t <= 2000; ++t) {
      for (std::size_t i = 0; i < n; ++i) g[i] = 2.0f * (w[i] - c[i]);
      adam_update_reference(cfg, t, w, g, m, v);
    }
    const double final_loss = loss();
    qInfo("convex problem: loss %.3g -> %.3g after 2000 steps", initial, final_loss);
    QVERIFY(final_loss < 1e-4 * initial);
    for (std::size_t i = 0; i < n; ++i) QVERIFY(within(w[i], c[i], {1e-2, 0}));
  }

  void rejects_bad_arguments() {
    const AdamConfig cfg;
    std::vector<float> w(3), g(3), m(3), v(2);
    QVERIFY_THROWS_EXCEPTION(ConfigError, adam_step_size(cfg, 0));
    QVERIFY_THROWS_EXCEPTION(Error, adam_update_reference(cfg, 1, w, g, m, v));
  }
};

QTEST_GUILESS_MAIN(TestAdam)
#include "test_adam.moc"

// PowerSGD (comm/powersgd.h) against a plain reference written from the paper's algorithm in
// double precision: which tensors compress, the factors and the error feedback over several
// steps, a full rank giving the exact sum, and the communicator over threads and processes:
// every rank receives the same bits, plain tensors and other all-reduces pass as exact sums,
// one replica is left alone.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "comm/hierarchical_communicator.h"
#include "comm/powersgd.h"
#include "comm/simulated_link.h"
#include "loopback_link.h"
#include "model/model_spec.h"
#include "util/bandwidth.h"
#include "util/on_threads.h"
#include "util/random.h"

using namespace mb;

namespace {

using Comms = std::vector<std::unique_ptr<Communicator>>;
using Matrix = std::vector<double>;   // row-major

// A model-like buffer: a bias (plain), a 12 x 40 weight (compressed at rank 2: 52 x 2 x 2 < 480),
// a 3 x 4 weight (plain: its factors are not under half of it) and another bias.
std::vector<ParamTensor> toy_params() {
  std::vector<ParamTensor> p(4);
  p[0] = {"a.bias", 1, {5, 0, 0, 0}, 0, 5};
  p[1] = {"b.weight", 4, {12, 10, 2, 2}, 5, 480};
  p[2] = {"c.weight", 2, {3, 4, 0, 0}, 485, 12};
  p[3] = {"c.bias", 1, {3, 0, 0, 0}, 497, 3};
  return p;
}
constexpr std::size_t kToyCount = 500;

std::vector<std::vector<float>> gradients(int ranks, std::size_t count, uint64_t seed) {
  std::vector<std::vector<float>> g(static_cast<std::size_t>(ranks), std::vector<float>(count));
  SplitMix64 rng(seed);
  for (auto& v : g)
    for (auto& x : v) x = float(rng.next_unit() * 2 - 1);
  return g;
}

// The paper's step for one matrix, in double: replicas' local matrices (error feedback already
// added), the shared Q; returns the approximation of the sum and updates Q and each error.
Matrix reference_step(std::vector<Matrix>& local, Matrix& q, int64_t rows, int64_t cols, int r,
                      std::vector<Matrix>& error) {
  const int n = int(local.size());
  Matrix p(std::size_t(rows * r), 0.0);   // row-major rows x r
  for (const Matrix& m : local)
    for (int64_t i = 0; i < rows; ++i)
      for (int k = 0; k < r; ++k)
        for (int64_t j = 0; j < cols; ++j) p[std::size_t(i * r + k)] += m[std::size_t(i * cols + j)] * q[std::size_t(j * r + k)];
  for (int k = 0; k < r; ++k) {   // Gram-Schmidt
    double norm = 0;
    for (int64_t i = 0; i < rows; ++i) norm += p[std::size_t(i * r + k)] * p[std::size_t(i * r + k)];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < rows; ++i) p[std::size_t(i * r + k)] = norm > 0 ? p[std::size_t(i * r + k)] / norm : 0;
    for (int k2 = k + 1; k2 < r; ++k2) {
      double d = 0;
      for (int64_t i = 0; i < rows; ++i) d += p[std::size_t(i * r + k)] * p[std::size_t(i * r + k2)];
      for (int64_t i = 0; i < rows; ++i) p[std::size_t(i * r + k2)] -= d * p[std::size_t(i * r + k)];
    }
  }
  std::fill(q.begin(), q.end(), 0.0);
  for (const Matrix& m : local)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        for (int k = 0; k < r; ++k) q[std::size_t(j * r + k)] += m[std::size_t(i * cols + j)] * p[std::size_t(i * r + k)];
  Matrix approx(std::size_t(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      for (int k = 0; k < r; ++k) approx[std::size_t(i * cols + j)] += p[std::size_t(i * r + k)] * q[std::size_t(j * r + k)];
  for (int x = 0; x < n; ++x)
    for (std::size_t e = 0; e < approx.size(); ++e) error[std::size_t(x)][e] = local[std::size_t(x)][e] - approx[e] / n;
  return approx;
}

// `ranks` replicas' states run side by side as the communicator runs them (sums in rank order).
void run_states(std::vector<PowerSgdState>& states, std::vector<std::vector<float>>& grads) {
  const PowerSgdLayout& l = states[0].layout();
  const std::size_t ranks = states.size();
  std::vector<std::vector<float>> first(ranks, std::vector<float>(l.plain_floats() + l.p_floats()));
  std::vector<std::vector<float>> second(ranks, std::vector<float>(l.q_floats()));
  auto sum_in_place = [&](std::vector<std::vector<float>>& bufs) {
    std::vector<float> sum = bufs[0];
    for (std::size_t r = 1; r < ranks; ++r)
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += bufs[r][i];
    for (auto& b : bufs) b = sum;
  };
  for (std::size_t r = 0; r < ranks; ++r) states[r].encode_p(grads[r], first[r]);
  sum_in_place(first);
  for (std::size_t r = 0; r < ranks; ++r) states[r].encode_q(grads[r], first[r], second[r]);
  sum_in_place(second);
  for (std::size_t r = 0; r < ranks; ++r) states[r].decode(grads[r], first[r], second[r], int(ranks));
}

double max_rel(const std::vector<float>& got, const Matrix& want, std::size_t offset) {
  double scale = 0, err = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    err = std::max(err, std::fabs(double(got[offset + i]) - want[i]));
  }
  return scale > 0 ? err / scale : err;
}

}  // namespace

class TestPowerSgd : public QObject {
  Q_OBJECT
 private slots:
  // PyTorch's rule: matrices whose rank-r factors hold under half their values; biases and small
  // weights as they are. The reference CNN at rank 4: conv2, fc1 and fc2 compress, conv1 does not.
  void layout_compresses_what_pays() {
    const PowerSgdLayout toy = powersgd_layout(toy_params(), kToyCount, 2);
    QCOMPARE(toy.matrices.size(), std::size_t(1));
    QCOMPARE(toy.matrices[0].offset, std::size_t(5));
    QCOMPARE(toy.matrices[0].rows, int64_t(12));
    QCOMPARE(toy.matrices[0].cols, int64_t(40));
    QCOMPARE(toy.plain.size(), std::size_t(3));
    QCOMPARE(toy.plain_floats(), std::size_t(20));
    QCOMPARE(toy.wire_floats(), std::size_t(20 + 12 * 2 + 40 * 2));

    const ModelShape& cnn = ModelSpec{}.shape();
    const PowerSgdLayout ref = powersgd_layout(cnn.params, cnn.param_count, 4);
    QStringList compressed;
    for (const auto& m : ref.matrices)
      for (const ParamTensor& t : cnn.params)
        if (t.offset == m.offset) compressed << QString::fromStdString(t.name);
    QCOMPARE(compressed, QStringList({"conv2.weight", "fc1.weight", "fc2.weight"}));
    QVERIFY(ref.wire_floats() * 10 < cnn.param_count);   // over 10x fewer values on the wire (8,818 of 121,930)
    // A rank beyond a matrix's sides is capped there; a rank of 0 is an error.
    const PowerSgdLayout wide = powersgd_layout(toy_params(), kToyCount, 64);
    QVERIFY(wide.matrices.empty());   // at rank 12, 52 x 12 x 2 values are more than 480
    QVERIFY_THROWS_EXCEPTION(ConfigError, powersgd_layout(toy_params(), kToyCount, 0));
  }

  void gram_schmidt_gives_orthonormal_columns() {
    const int64_t rows = 37;
    const int r = 4;
    std::vector<float> m(std::size_t(rows * r));
    SplitMix64 rng(3);
    for (float& x : m) x = float(rng.next_unit() - 0.5);
    std::fill_n(m.begin() + 2 * rows, rows, 0.0f);   // a zero column stays zero
    orthonormalize_columns(m, rows, r);
    for (int a = 0; a < r; ++a)
      for (int b = 0; b < r; ++b) {
        double d = 0;
        for (int64_t i = 0; i < rows; ++i) d += double(m[std::size_t(a * rows + i)]) * m[std::size_t(b * rows + i)];
        const double want = a == b && a != 2 ? 1.0 : 0.0;
        QVERIFY2(std::fabs(d - want) < 1e-5, qPrintable(QString("columns %1, %2: %3").arg(a).arg(b).arg(d)));
      }
  }

  // Three steps on three replicas against the double-precision reference: the approximation,
  // the plain tensors' exact sums, and (through the next steps) the error feedback and warm start.
  void steps_match_the_reference() {
    const int ranks = 3, r = 2, steps = 3;
    const PowerSgdLayout layout = powersgd_layout(toy_params(), kToyCount, r);
    std::vector<PowerSgdState> states;
    for (int x = 0; x < ranks; ++x) states.emplace_back(layout, 42);
    const auto& mat = layout.matrices[0];
    // The reference starts from the states' own first Q (the same on every replica).
    Matrix q(std::size_t(mat.cols * r));
    {
      // P = M Q with M = the unit matrix's first rows reveals nothing; read Q through a step on
      // a gradient that is 1 at (0, j) only: P[0, k] = Q[j, k].
      for (int64_t j = 0; j < mat.cols; ++j) {
        PowerSgdState probe(layout, 42);
        std::vector<float> g(kToyCount, 0.0f), first(layout.plain_floats() + layout.p_floats());
        g[mat.offset + std::size_t(j)] = 1.0f;
        probe.encode_p(g, first);
        for (int k = 0; k < r; ++k) q[std::size_t(j * r + k)] = first[layout.plain_floats() + std::size_t(k * mat.rows)];
      }
    }
    std::vector<Matrix> error(ranks, Matrix(std::size_t(mat.rows * mat.cols), 0.0));
    for (int step = 0; step < steps; ++step) {
      auto grads = gradients(ranks, kToyCount, 100 + uint64_t(step));
      std::vector<Matrix> local(ranks);
      for (int x = 0; x < ranks; ++x) {
        local[std::size_t(x)].resize(error[0].size());
        for (std::size_t e = 0; e < error[0].size(); ++e)
          local[std::size_t(x)][e] = double(grads[std::size_t(x)][mat.offset + e]) + error[std::size_t(x)][e];
      }
      std::vector<float> plain_sum(kToyCount, 0.0f);
      for (int x = 0; x < ranks; ++x)
        for (std::size_t i = 0; i < kToyCount; ++i) plain_sum[i] += grads[std::size_t(x)][i];
      const Matrix want = reference_step(local, q, mat.rows, mat.cols, r, error);
      run_states(states, grads);
      for (int x = 0; x < ranks; ++x) {
        const double rel = max_rel(grads[std::size_t(x)], want, mat.offset);
        QVERIFY2(rel < 1e-4, qPrintable(QString("step %1 rank %2: %3").arg(step).arg(x).arg(rel)));
        QVERIFY(std::memcmp(grads[std::size_t(x)].data(), grads[0].data(), kToyCount * sizeof(float)) == 0);
        for (const auto& span : layout.plain)
          for (std::size_t i = span.offset; i < span.offset + span.count; ++i)
            QCOMPARE(grads[std::size_t(x)][i], plain_sum[i]);
      }
    }
  }

  // At the matrix's full rank the factors span it: the approximation is the exact sum (up to
  // rounding) and nothing is left for the error.
  void full_rank_is_the_exact_sum() {
    std::vector<ParamTensor> params(1);
    params[0] = {"w", 2, {6, 40, 0, 0}, 0, 240};
    PowerSgdLayout layout = powersgd_layout(params, 240, 1);
    layout.matrices[0].rank = 6;   // (6 + 40) x 6 x 2 > 240: forced, to test the arithmetic alone
    std::vector<PowerSgdState> states;
    for (int x = 0; x < 2; ++x) states.emplace_back(layout, 9);
    auto grads = gradients(2, 240, 5);
    std::vector<float> sum(240);
    for (std::size_t i = 0; i < 240; ++i) sum[i] = grads[0][i] + grads[1][i];
    run_states(states, grads);
    double err = 0;
    for (std::size_t i = 0; i < 240; ++i) err = std::max(err, double(std::fabs(grads[0][i] - sum[i])));
    QVERIFY2(err < 1e-4, qPrintable(QString::number(err)));
  }

  // Through the communicator over threads and processes: every rank receives the same bits, the
  // states' result; other all-reduces pass as exact sums; one replica is left alone.
  void the_communicator_gives_every_rank_the_same_bits_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    QTest::addRow("threads 3") << 1 << 3;
    QTest::addRow("processes 2") << 2 << 1;
    QTest::addRow("processes 2 x threads 2") << 2 << 2;
  }
  void the_communicator_gives_every_rank_the_same_bits() {
    QFETCH(int, processes);
    QFETCH(int, threads);
    const int ranks = processes * threads;
    const PowerSgdLayout layout = powersgd_layout(toy_params(), kToyCount, 2);
    Comms comms = test::make_world(processes, threads);
    for (auto& c : comms) c = make_powersgd(std::move(c), layout, 11);
    std::vector<PowerSgdState> states;
    for (int x = 0; x < ranks; ++x) states.emplace_back(layout, 11);
    for (int step = 0; step < 2; ++step) {
      auto grads = gradients(ranks, kToyCount, 7 + uint64_t(step));
      auto want = grads;
      run_states(states, want);
      on_threads(ranks, [&](int r) { comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), kToyCount); });
      for (int r = 0; r < ranks; ++r) {
        const float* a = grads[std::size_t(r)].data();
        const float* b = grads[0].data();
        QVERIFY2(std::memcmp(a, b, kToyCount * sizeof(float)) == 0, qPrintable(QString("rank %1").arg(r)));
        for (std::size_t i = 0; i < kToyCount; ++i)
          QVERIFY2(std::fabs(a[i] - want[0][i]) <= 1e-5f * (1 + std::fabs(want[0][i])),
                   qPrintable(QString("rank %1 value %2: %3 against %4").arg(r).arg(i).arg(a[i]).arg(want[0][i])));
      }
    }
    // Another length (statistics, a calibration buffer): summed as it is.
    std::vector<std::vector<float>> other(std::size_t(ranks), std::vector<float>(7, 0.5f));
    on_threads(ranks, [&](int r) { comms[std::size_t(r)]->all_reduce_sum(other[std::size_t(r)].data(), 7); });
    for (const auto& v : other)
      for (float x : v) QCOMPARE(x, 0.5f * float(ranks));
  }

  void one_replica_is_left_alone() {
    Comms comms = make_thread_communicators(1);
    Communicator* bare = comms[0].get();
    auto c = make_powersgd(std::move(comms[0]), powersgd_layout(toy_params(), kToyCount, 2), 1);
    QVERIFY(c.get() == bare);   // nothing wrapped: nothing travels, nothing is compressed
  }

  // Around a simulated link the factors' two small exchanges are what the link times.
  void the_link_times_the_factors() {
    const PowerSgdLayout layout = powersgd_layout(toy_params(), kToyCount, 2);
    const SimulatedLink link{0.001, 0.0};   // 1 Mbit/s: slower than any real exchange here
    Comms comms = make_thread_communicators(2);
    for (auto& c : comms) c = make_powersgd(make_simulated_link(std::move(c), link), layout, 3);
    auto grads = gradients(2, kToyCount, 1);
    std::vector<CollectiveTimes> times(2);
    on_threads(2, [&](int r) {
      comms[std::size_t(r)]->all_reduce_sum(grads[std::size_t(r)].data(), kToyCount);
      times[std::size_t(r)] = comms[std::size_t(r)]->take_times();
    });
    const double first = double(layout.plain_floats() + layout.p_floats()) * sizeof(float);
    const double second = double(layout.q_floats()) * sizeof(float);
    const double wire_s = ring_all_reduce_s(first, 2, link.gbit, 0) + ring_all_reduce_s(second, 2, link.gbit, 0);
    const double whole_s = ring_all_reduce_s(double(kToyCount) * sizeof(float), 2, link.gbit, 0);
    QVERIFY2(times[0].transfer_s >= wire_s && times[0].transfer_s < whole_s,
             qPrintable(QString("%1 s: the factors' ring takes %2 s, the whole gradient's %3 s")
                            .arg(times[0].transfer_s)
                            .arg(wire_s)
                            .arg(whole_s)));
    Scenario s;
    s.powersgd_rank = 4;
    const ModelShape& cnn = ModelSpec{}.shape();
    QCOMPARE(gradient_wire_bytes(cnn, s),
             double(powersgd_layout(cnn.params, cnn.param_count, 4).wire_floats()) * sizeof(float));
  }
};

QTEST_GUILESS_MAIN(TestPowerSgd)
#include "test_powersgd.moc"

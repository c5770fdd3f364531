// The simulated link (comm/simulated_link.h) on a fake clock: the ring's time over the link,
// max(real, simulated) per gradient all-reduce, the extra counted as exchange and not as
// waiting, the control plane untouched, and the arithmetic of util/bandwidth.h's ring.
#include <QtTest>

#include <memory>
#include <utility>
#include <vector>

#include "comm/simulated_link.h"
#include "test_support.h"
#include "util/bandwidth.h"
#include "util/error.h"

using namespace mb;

namespace {

// A rank of `ranks` whose collectives take no time but report the times they are given.
class FakeComm final : public Communicator {
 public:
  FakeComm(int ranks, CollectiveTimes per_call) : ranks_(ranks), per_call_(per_call) {}
  int rank() const override { return 0; }
  int size() const override { return ranks_; }
  std::string name() const override { return "fake"; }
  void all_reduce_sum(float*, std::size_t) override { times_ += per_call_, ++reduces; }
  void broadcast_bytes(void*, std::size_t, int) override { times_ += per_call_; }
  void all_gather_bytes(const void*, std::size_t, void*) override { times_ += per_call_; }
  void barrier() override {}
  void abort(const std::string&) override {}
  CollectiveTimes take_times() override { return std::exchange(times_, CollectiveTimes{}); }
  int reduces = 0;

 private:
  int ranks_;
  CollectiveTimes per_call_;
  CollectiveTimes times_;
};

struct Wrapped {
  std::shared_ptr<std::vector<double>> slept = std::make_shared<std::vector<double>>();   // the fake clock
  FakeComm* inner = nullptr;
  std::unique_ptr<Communicator> comm;
};

Wrapped wrap(int ranks, CollectiveTimes per_call, SimulatedLink link) {
  Wrapped w;
  auto inner = std::make_unique<FakeComm>(ranks, per_call);
  w.inner = inner.get();
  w.comm = make_simulated_link(std::move(inner), link, [slept = w.slept](double s) { slept->push_back(s); });
  return w;
}

}  // namespace

class TestSimulatedLink : public QObject {
  Q_OBJECT

 private slots:
  // 2(n-1)/n bytes over the bandwidth plus 2(n-1) latencies, in bits and microseconds.
  void ring_arithmetic() {
    QCOMPARE(ring_all_reduce_s(1e9, 2, 8, 0), 1.0);   // 1 GB x 2(1)/2 x 8 bit / 8 Gbit/s
    QCOMPARE(ring_all_reduce_s(1e9, 4, 10, 5), 6.0 / 4 * 8e9 / 1e10 + 6 * 5e-6);
    QCOMPARE(ring_all_reduce_s(0, 3, 1, 100), 4 * 100e-6);   // latency only
    QCOMPARE(ring_all_reduce_s(1e9, 1, 1, 100), 0.0);        // one rank: no exchange
    QCOMPARE(simulated_exchange_s({1, 0}, 1.25e8, 2, 0.5), 1.0);   // the link is slower
    QCOMPARE(simulated_exchange_s({1, 0}, 1.25e8, 2, 2.0), 2.0);   // the machine is slower
  }

  // dense 4096's gradient over 1 Gbit/s between two replicas: 0.2117 s; the real exchange took
  // 10 ms, so the link sleeps the rest and reports all of it as exchange, the wait unchanged.
  void slow_link_sleeps_the_difference_as_exchange() {
    Wrapped w = wrap(2, {0.003, 0.010}, {1, 0});
    const std::size_t floats = 6617482;
    std::vector<float> g(16);
    w.comm->all_reduce_sum(g.data(), floats);
    const double ring = ring_all_reduce_s(double(floats) * 4, 2, 1, 0);
    QCOMPARE(w.slept->size(), std::size_t(1));
    QVERIFY(qFuzzyCompare((*w.slept)[0], ring - 0.010));
    const CollectiveTimes t = w.comm->take_times();
    QVERIFY(qFuzzyCompare(t.transfer_s, ring));
    QCOMPARE(t.wait_s, 0.003);
    QCOMPARE(w.inner->reduces, 1);   // the real sum still ran: results stay exact
    const CollectiveTimes again = w.comm->take_times();
    QCOMPARE(again.transfer_s, 0.0);   // taken once
  }

  // A link faster than the machine's own exchange changes nothing.
  void fast_link_changes_nothing() {
    Wrapped w = wrap(2, {0.0, 0.010}, {900, 0});   // NVLink-class
    std::vector<float> g(16);
    w.comm->all_reduce_sum(g.data(), 1000);
    QVERIFY(w.slept->empty());
    QCOMPARE(w.comm->take_times().transfer_s, 0.010);
  }

  // Statistics, weights and digests travel the control plane: never slowed; latency per hop.
  void control_plane_and_latency() {
    Wrapped w = wrap(4, {0.0, 1e-9}, {100, 50});
    int x = 0;
    w.comm->broadcast(std::span<int>(&x, 1), 0);
    std::vector<int> all(4);
    w.comm->all_gather_bytes(&x, sizeof x, all.data());
    QVERIFY(w.slept->empty());
    std::vector<float> g(1);
    w.comm->all_reduce_sum(g.data(), 1);
    QCOMPARE(w.slept->size(), std::size_t(1));
    QVERIFY(qFuzzyCompare((*w.slept)[0], ring_all_reduce_s(4, 4, 100, 50) - 1e-9));
    QVERIFY((*w.slept)[0] > 0.99 * 6 * 50e-6);   // 4 bytes: nearly all of it is the 6 hops
  }

  void labelled_and_refused_without_bandwidth() {
    Wrapped w = wrap(2, {}, {1, 0});
    QCOMPARE(QString::fromStdString(w.comm->name()), QString("fake [simulated link]"));
    QVERIFY(test::expect_error<ConfigError>(
        [] { make_simulated_link(std::make_unique<FakeComm>(2, CollectiveTimes{}), {0, 10}); }, "--simulated-link"));
  }
};

QTEST_GUILESS_MAIN(TestSimulatedLink)
#include "test_simulated_link.moc"

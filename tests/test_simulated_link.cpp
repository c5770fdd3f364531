// The simulated link (comm/simulated_link.h) on a fake clock: the ring's time over the link,
// max(real, simulated) per gradient all-reduce, the extra counted as exchange and not as
// waiting, the control plane untouched, and the arithmetic of util/bandwidth.h's ring.
#include <QtTest>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "comm/gradient_buckets.h"
#include "comm/simulated_link.h"
#include "model/model_spec.h"
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
  // Every rank sent what this one did.
  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    for (int r = 0; r < ranks_; ++r) std::memcpy(static_cast<char*>(all) + std::size_t(r) * bytes, mine, bytes);
    times_ += per_call_;
  }
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

  // DDP's buckets: the gradient buffer tiled from its end (the last layer's gradient is
  // complete first), whole layers only, at most the cap unless one layer alone exceeds it.
  void buckets_tile_the_gradient_in_backward_order() {
    const ModelSpec model = reference_family(64);
    const ModelShape& ref = model.shape();   // conv1 0.3k, conv2 18.5k, fc1 102k, fc2 650 params
    std::vector<GradientBucket> b = gradient_buckets(ref, 0.1);
    QCOMPARE(b.size(), std::size_t(3));
    QCOMPARE(b[0].end, ref.param_count);
    for (std::size_t i = 1; i < b.size(); ++i) QCOMPARE(b[i].end, b[i - 1].begin);
    QCOMPARE(b.back().begin, std::size_t(0));
    QCOMPARE(ref.layers[std::size_t(b[0].ready_layer)].name, std::string("fc2"));
    QCOMPARE(ref.layers[std::size_t(b[1].ready_layer)].name, std::string("fc1"));   // 0.41 MB: alone, over the cap
    QCOMPARE(ref.layers[std::size_t(b[2].ready_layer)].name, std::string("conv1"));  // conv2 and conv1 together
    QVERIFY(b[1].bytes() > 0.1e6 && b[2].bytes() <= 0.1e6);
    b = gradient_buckets(ref, 25);   // DDP's default: one bucket, complete when conv1's gradient is
    QCOMPARE(b.size(), std::size_t(1));
    QCOMPARE(b[0].begin, std::size_t(0));
    QCOMPARE(ref.layers[std::size_t(b[0].ready_layer)].name, std::string("conv1"));
    QVERIFY(test::expect_error<ConfigError>([&] { gradient_buckets(ref, 0); }, "--bucket-mb"));
  }

  // Overlap by hand: 1 Gbit/s, no latency, 2 ranks, 1 MB buckets (8 ms of wire each). The first
  // is complete 10 ms before the exchange and runs -10..-2 ms; the second is complete 4 ms before
  // it but waits for the wire, -2..+6 ms: 6 ms exposed, 10 ms hidden. A bucket ready at the end hides nothing; many
  // small buckets pay the latency each.
  void buckets_hide_wire_time_under_the_backward_pass() {
    const SimulatedLink link{1, 0};
    const std::vector<OverlapBucket> two{{1e6, 0.010}, {1e6, 0.004}};
    WireSchedule w = overlapped_wire(link, two, 2, 1.0);
    QVERIFY(qFuzzyCompare(w.exposed_s, 0.006));
    QVERIFY(qFuzzyCompare(w.hidden_s, 0.010));
    w = overlapped_wire(link, two, 2, 0.5);   // a 16-bit wire: 4 ms each, all of it hidden
    QCOMPARE(w.exposed_s, 0.0);
    QVERIFY(qFuzzyCompare(w.hidden_s, 0.008));
    const std::vector<OverlapBucket> at_end{{2e6, 0.0}};
    w = overlapped_wire(link, at_end, 2, 1.0);
    QVERIFY(qFuzzyCompare(w.exposed_s, ring_all_reduce_s(2e6, 2, 1, 0)));
    QCOMPARE(w.hidden_s, 0.0);
    const SimulatedLink slow_hops{1, 50};
    std::vector<OverlapBucket> many(100, OverlapBucket{2e4, 0.0});
    QVERIFY(overlapped_wire(slow_hops, many, 2, 1.0).exposed_s >
            overlapped_wire(slow_hops, at_end, 2, 1.0).exposed_s + 98 * 2 * 50e-6);

    // Through the wrapper: the agreed leads (one rank here) decide what is slept.
    Wrapped x = wrap(2, {0.0, 0.001}, link);
    x.comm->overlap_next_all_reduce(two);
    std::vector<float> g(16);
    x.comm->all_reduce_sum(g.data(), 500000);   // 2 MB: the buckets' bytes count, not the call's
    QCOMPARE(x.slept->size(), std::size_t(1));
    QVERIFY(qFuzzyCompare((*x.slept)[0], 0.006 - 0.001));
    const CollectiveTimes t = x.comm->take_times();
    QVERIFY(qFuzzyCompare(t.hidden_s, 0.010));
    x.comm->all_reduce_sum(g.data(), 250000);   // no buckets announced: one ring after the backward pass
    QVERIFY(qFuzzyCompare(x.slept->back(), ring_all_reduce_s(1e6, 2, 1, 0) - 0.001));
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

// The host communicators, nccl-tests style: inputs are small integers, so every sum is exact
// in float and correctness is a count of wrong elements, no tolerance. Threads alone, and P
// "processes" x T threads over a loopback link (the MPI link's semantics in one process): the
// hierarchical all-reduce must give every rank the same bits, and for one replica per process
// the very bits the in-process threads give.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "util/on_threads.h"
#include "comm/hierarchical_communicator.h"
#include "loopback_link.h"
#include "util/error.h"
#include "util/random.h"
#include "util/spin_barrier.h"

using namespace mb;

namespace {

using Comms = std::vector<std::unique_ptr<Communicator>>;

float input_value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 1000) + rank); }

}  // namespace

class TestCommunicator : public QObject {
  Q_OBJECT
 private slots:
  void all_reduce_exact_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("count");
    for (auto [p, t] : {std::pair{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 7}, {2, 1}, {2, 2}, {3, 2}, {4, 1}})
      for (int count : {0, 1, 15, 16, 17, 1000, 121930})
        QTest::addRow("%dx%d count=%d", p, t, count) << p << t << count;
  }
  void all_reduce_exact() {
    QFETCH(int, processes);
    QFETCH(int, threads);
    QFETCH(int, count);
    Comms comms = test::make_world(processes, threads);
    const int ranks = processes * threads;
    QCOMPARE(int(comms.size()), ranks);
    for (int r = 0; r < ranks; ++r) {
      QCOMPARE(comms[r]->rank(), r);
      QCOMPARE(comms[r]->size(), ranks);
    }
    QCOMPARE(QString::fromStdString(comms[0]->name()), QString(processes > 1 ? "loopback+threads" : "threads"));
    std::vector<std::vector<float>> bufs(ranks, std::vector<float>(count));
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < count; ++i) bufs[r][i] = input_value(r, i);
    // Three rounds on the same buffers: the barriers must keep rounds apart.
    for (int round = 0; round < 3; ++round) {
      on_threads(ranks, [&](int r) { comms[r]->all_reduce_sum(bufs[r].data(), count); });
      std::size_t wrong = 0;
      const double factor = std::pow(ranks, round);  // each round multiplies the sum by `ranks`
      for (int r = 0; r < ranks; ++r)
        for (int i = 0; i < count; ++i) {
          double expect = 0;
          for (int q = 0; q < ranks; ++q) expect += input_value(q, i);
          if (bufs[r][i] != static_cast<float>(expect * factor)) ++wrong;
        }
      QCOMPARE(wrong, std::size_t(0));
    }
  }

  void processes_give_the_bits_threads_give_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    QTest::addRow("2 processes x 1") << 2 << 1;
    QTest::addRow("2 processes x 2") << 2 << 2;
    QTest::addRow("3 processes x 2") << 3 << 2;
  }
  void processes_give_the_bits_threads_give() {
    // Inexact inputs: rounding depends on the order of the additions. Every rank must end
    // with the same bits (MirroredStrategy's invariant); with one replica per process those
    // are the bits the in-process threads compute.
    QFETCH(int, processes);
    QFETCH(int, threads);
    const int ranks = processes * threads;
    const std::size_t count = 5000;
    auto inputs = [&] {
      std::vector<std::vector<float>> b(ranks, std::vector<float>(count));
      SplitMix64 rng(11);
      for (auto& v : b)
        for (auto& x : v) x = static_cast<float>(rng.next_unit() * 2 - 1) * 1e-3f;
      return b;
    };
    auto hier = inputs(), flat = inputs();
    Comms h = test::make_world(processes, threads), f = make_thread_communicators(ranks);
    on_threads(ranks, [&](int r) { h[r]->all_reduce_sum(hier[r].data(), count); });
    on_threads(ranks, [&](int r) { f[r]->all_reduce_sum(flat[r].data(), count); });
    for (int r = 1; r < ranks; ++r) QVERIFY(std::memcmp(hier[r].data(), hier[0].data(), count * 4) == 0);
    double worst = 0;
    for (std::size_t i = 0; i < count; ++i) worst = std::max(worst, double(std::fabs(hier[0][i] - flat[0][i])));
    if (threads == 1) QCOMPARE(worst, 0.0);
    else QVERIFY2(worst <= 1e-9, qPrintable(QString::number(worst)));   // order differs, a few ulps of 1e-3
  }

  void broadcast_from_each_root_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    QTest::addRow("threads") << 1 << 3;
    QTest::addRow("2x2") << 2 << 2;
    QTest::addRow("3x1") << 3 << 1;
  }
  void broadcast_from_each_root() {
    QFETCH(int, processes);
    QFETCH(int, threads);
    const int ranks = processes * threads, count = 4099;
    Comms comms = test::make_world(processes, threads);
    for (int root = 0; root < ranks; ++root) {
      std::vector<std::vector<float>> bufs(ranks, std::vector<float>(count));
      for (int r = 0; r < ranks; ++r)
        for (int i = 0; i < count; ++i) bufs[r][i] = input_value(r, i);
      on_threads(ranks, [&](int r) { comms[r]->broadcast(std::span<float>(bufs[r]), root); });
      for (int r = 0; r < ranks; ++r) QVERIFY(bufs[r] == bufs[root]);
      for (int i = 0; i < count; ++i) QCOMPARE(bufs[0][i], input_value(root, i));
    }
  }

  void all_gather_in_rank_order_data() { broadcast_from_each_root_data(); }
  void all_gather_in_rank_order() {
    QFETCH(int, processes);
    QFETCH(int, threads);
    const int ranks = processes * threads;
    Comms comms = test::make_world(processes, threads);
    struct Item {
      int32_t rank;
      double value;
    };
    std::vector<std::vector<Item>> got(ranks);
    for (int round = 0; round < 2; ++round) {
      on_threads(ranks, [&](int r) { got[r] = comms[r]->all_gather(Item{r, r * 0.5 + round}); });
      for (int r = 0; r < ranks; ++r) {
        QCOMPARE(int(got[r].size()), ranks);
        for (int q = 0; q < ranks; ++q) {
          QCOMPARE(got[r][q].rank, q);
          QCOMPARE(got[r][q].value, q * 0.5 + round);
        }
      }
    }
  }

  void back_to_back_collectives_stay_apart_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    for (auto [p, t] : {std::pair{1, 2}, {1, 3}, {1, 4}, {2, 2}}) QTest::addRow("%dx%d", p, t) << p << t;
  }
  void back_to_back_collectives_stay_apart() {
    // A training step's collectives, round after round in one go, as the trainer calls them:
    // a rank that returns overwrites its buffer at once (the next backward) and enters the
    // next collective while others may still be copying results. Uneven delays make ranks
    // race ahead; sizes grow mid-run; every result is checked exactly.
    QFETCH(int, processes);
    QFETCH(int, threads);
    const int ranks = processes * threads;
    Comms comms = test::make_world(processes, threads);
    std::vector<std::size_t> wrong(std::size_t(ranks), 0);
    on_threads(ranks, [&](int r) {
      Communicator& c = *comms[std::size_t(r)];
      SplitMix64 jitter(std::uint64_t(r) + 1);
      std::vector<float> buf;
      for (int round = 0; round < 300; ++round) {
        const std::size_t count = round < 100 ? 17 : round < 200 ? 1000 : round % 2 ? 300000 : 40000;
        buf.assign(count, 0.0f);
        for (std::size_t i = 0; i < count; ++i) buf[i] = input_value(r, i) + float(round % 7);
        if (jitter.next_unit() < 0.3) std::this_thread::sleep_for(std::chrono::microseconds(50));
        c.all_reduce_sum(buf.data(), count);
        for (std::size_t i = 0; i < count; i += 7) {
          double expect = 0;
          for (int q = 0; q < ranks; ++q) expect += input_value(q, i) + float(round % 7);
          if (buf[i] != static_cast<float>(expect)) ++wrong[std::size_t(r)];
        }
        std::fill(buf.begin(), buf.end(), -1.0f);   // what the next backward does to it
        struct Item {
          int32_t rank, round;
        };
        const auto all = c.all_gather(Item{r, round});
        for (int q = 0; q < ranks; ++q)
          if (all[std::size_t(q)].rank != q || all[std::size_t(q)].round != round) ++wrong[std::size_t(r)];
      }
    });
    for (int r = 0; r < ranks; ++r) QCOMPARE(wrong[std::size_t(r)], std::size_t(0));
  }

  void barrier_holds_everyone() {
    Comms comms = test::make_world(2, 2);
    std::atomic<int> arrived{0};
    std::vector<int> seen(4, -1);
    on_threads(4, [&](int r) {
      if (r == 3) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      ++arrived;
      comms[r]->barrier();
      seen[r] = arrived.load();
    });
    for (int r = 0; r < 4; ++r) QCOMPARE(seen[r], 4);
  }

  void waiting_for_a_late_rank_is_measured_as_wait() {
    // Rank 1 arrives 60 ms late: rank 0's time in the all-reduce is (nearly all) waiting.
    Comms comms = make_thread_communicators(2);
    std::vector<std::vector<float>> bufs(2, std::vector<float>(1000, 1.0f));
    std::vector<CollectiveTimes> times(2);
    on_threads(2, [&](int r) {
      comms[r]->take_times();
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(60));
      comms[r]->all_reduce_sum(bufs[r].data(), bufs[r].size());
      times[r] = comms[r]->take_times();
    });
    QVERIFY2(times[0].wait_s >= 0.05, qPrintable(QString::number(times[0].wait_s)));
    QVERIFY(times[0].wait_s > times[1].wait_s);
    QVERIFY(times[0].transfer_s >= 0 && times[1].transfer_s >= 0);
    QCOMPARE(bufs[0][0], 2.0f);
  }

  void abort_releases_waiting_ranks() {
    // Rank 1 "fails" and never joins the collective; aborting must free rank 0.
    Comms comms = make_thread_communicators(2);
    std::vector<float> buf(100, 1.0f);
    bool aborted = false;
    std::thread waiter([&] {
      try {
        comms[0]->all_reduce_sum(buf.data(), buf.size());
      } catch (const BarrierAborted&) {
        aborted = true;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    comms[1]->abort("replica 1 broke");
    waiter.join();
    QVERIFY(aborted);
  }

  void a_failing_process_fails_the_others_with_its_reason() {
    // 2 processes x 2 threads: a replica of process 1 fails. In process 0, waiting in an
    // all-reduce, the rank that was talking to the link gets PeerFailure naming process 1
    // and the reason, its local peer BarrierAborted; process 1's other rank gets
    // BarrierAborted too (its own process failed).
    Comms comms = test::make_world(2, 2);
    std::vector<std::string> outcome(4);
    on_threads(4, [&](int r) {
      std::vector<float> buf(64, 1.0f);
      try {
        if (r == 3) {
          std::this_thread::sleep_for(std::chrono::milliseconds(30));
          comms[r]->abort("replica 3: device lost");
          outcome[r] = "failed";
          return;
        }
        comms[r]->all_reduce_sum(buf.data(), buf.size());
        outcome[r] = "completed";
      } catch (const PeerFailure& e) {
        outcome[r] = std::string("peer: ") + e.what();
      } catch (const BarrierAborted&) {
        outcome[r] = "aborted";
      }
    });
    const QString peer = QString::fromStdString(outcome[0].rfind("peer", 0) == 0 ? outcome[0] : outcome[1]);
    const QString other = QString::fromStdString(outcome[0].rfind("peer", 0) == 0 ? outcome[1] : outcome[0]);
    QVERIFY2(peer.startsWith("peer: process 1") && peer.contains("replica 3: device lost"), qPrintable(peer));
    QCOMPARE(other, QString("aborted"));
    QCOMPARE(QString::fromStdString(outcome[2]), QString("aborted"));
  }

  void throwing_completion_releases_the_others() {
    // The last arrival runs the completion; if it throws, the others must get BarrierAborted
    // instead of waiting for a generation that never comes.
    SpinBarrier barrier(3);
    std::atomic<int> aborted{0}, thrown{0};
    on_threads(3, [&](int) {
      try {
        barrier.arrive_and_wait([] { throw std::runtime_error("completion failed"); });
      } catch (const BarrierAborted&) {
        ++aborted;
      } catch (const std::runtime_error&) {
        ++thrown;
      }
    });
    QCOMPARE(thrown.load(), 1);
    QCOMPARE(aborted.load(), 2);
  }

  void rejects_bad_rank_counts() {
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_thread_communicators(0));
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_thread_communicators(-1));
  }

  void processes_must_run_as_many_replicas() {
    auto links = test::make_loopback_links(2);
    std::vector<std::string> errors(2);
    on_threads(2, [&](int p) {
      try {
        make_process_communicators(p == 0 ? 2 : 1, links[p]);
      } catch (const ConfigError& e) {
        errors[p] = e.what();
      }
    });
    for (const auto& e : errors) QVERIFY2(QString::fromStdString(e).contains("same --devices"), e.c_str());
  }
};

QTEST_GUILESS_MAIN(TestCommunicator)
#include "test_communicator.moc"

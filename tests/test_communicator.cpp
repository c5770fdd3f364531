// The in-process all-reduce and broadcast, nccl-tests style: inputs are small integers, so
// every sum is exact in float and correctness is a count of wrong elements, no tolerance.
#include <QtTest>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "comm/communicator.h"
#include "util/error.h"
#include "util/spin_barrier.h"

using namespace mb;

namespace {

// Runs fn(rank) on `ranks` threads and joins them.
template <typename Fn>
void on_ranks(int ranks, Fn fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

float input_value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * (i % 1000) + rank); }

}  // namespace

class TestCommunicator : public QObject {
  Q_OBJECT
 private slots:
  void all_reduce_exact_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("count");
    for (int ranks : {1, 2, 3, 4, 7})
      for (int count : {0, 1, 15, 16, 17, 1000, 121930})
        QTest::addRow("ranks=%d count=%d", ranks, count) << ranks << count;
  }
  void all_reduce_exact() {
    QFETCH(int, ranks);
    QFETCH(int, count);
    auto comm = make_thread_communicator(ranks);
    QCOMPARE(comm->size(), ranks);
    std::vector<std::vector<float>> bufs(ranks, std::vector<float>(count));
    for (int r = 0; r < ranks; ++r)
      for (int i = 0; i < count; ++i) bufs[r][i] = input_value(r, i);
    // Three rounds on the same buffers: the barriers must keep rounds apart.
    for (int round = 0; round < 3; ++round) {
      on_ranks(ranks, [&](int r) { comm->all_reduce_sum(r, bufs[r].data(), count); });
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

  void broadcast_from_each_root() {
    const int ranks = 3, count = 4099;
    auto comm = make_thread_communicator(ranks);
    for (int root = 0; root < ranks; ++root) {
      std::vector<std::vector<float>> bufs(ranks, std::vector<float>(count));
      for (int r = 0; r < ranks; ++r)
        for (int i = 0; i < count; ++i) bufs[r][i] = input_value(r, i);
      on_ranks(ranks, [&](int r) { comm->broadcast(r, bufs[r].data(), count, root); });
      for (int r = 0; r < ranks; ++r) QVERIFY(bufs[r] == bufs[root]);
      for (int i = 0; i < count; ++i) QCOMPARE(bufs[0][i], input_value(root, i));
    }
  }

  void abort_releases_waiting_ranks() {
    // Rank 1 "fails" and never joins the collective; aborting must free rank 0.
    auto comm = make_thread_communicator(2);
    std::vector<float> buf(100, 1.0f);
    bool aborted = false;
    std::thread waiter([&] {
      try {
        comm->all_reduce_sum(0, buf.data(), buf.size());
      } catch (const BarrierAborted&) {
        aborted = true;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    comm->abort();
    waiter.join();
    QVERIFY(aborted);
  }

  void throwing_completion_releases_the_others() {
    // The last arrival runs the completion; if it throws, the others must get BarrierAborted
    // instead of waiting for a generation that never comes.
    SpinBarrier barrier(3);
    std::atomic<int> aborted{0}, thrown{0};
    on_ranks(3, [&](int) {
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
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_thread_communicator(0));
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_thread_communicator(-1));
  }
};

QTEST_GUILESS_MAIN(TestCommunicator)
#include "test_communicator.moc"

// The input pipeline (issue 28, trainer/input_pipeline.h): steps reach the replica in order,
// each prepared once; the loaders never run more than loaders x prefetch steps ahead (the
// queue's bound); a held step is waited for and the wait is measured; a stuck loader meets the
// deadline with a message naming the step; the costs take what they say (lower bounds only:
// sleeps and CPU time never end early); a run that stops does not wait out a long step.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "trainer/input_pipeline.h"
#include "util/phase_times.h"
#include "test_support.h"

using namespace mb;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

class TestInputPipeline : public QObject {
  Q_OBJECT
 private slots:
  // Three loaders of two steps each (a window of 6), three epochs of 25 steps whose shares
  // differ: every step is prepared once with its own image count, and the replica takes them in
  // order. Before each step the test waits until the window is full (six steps prepared
  // ahead), so the bound is both reached and never passed.
  void steps_arrive_in_order_within_the_window() {
    std::mutex m;
    std::map<std::pair<int, int64_t>, int64_t> prepared;   // (epoch, step) -> images
    std::atomic<int> epoch{0};
    std::atomic<int64_t> done{0};
    std::atomic<int> twice{0};   // a step prepared a second time (counted here: QVERIFY is for the main thread)
    InputPipeline p(3, 2, {}, [&](int64_t step, int64_t images) {
      std::lock_guard lock(m);
      if (!prepared.emplace(std::pair{epoch.load(), step}, images).second) ++twice;
      ++done;
    });
    for (int e = 0; e < 3; ++e) {
      epoch = e;
      done = 0;
      p.begin_epoch(25, [](int64_t s) { return 10 + s % 7; });
      for (int64_t s = 0; s < 25; ++s) {
        const auto until = Clock::now() + std::chrono::seconds(10);
        while (done.load() < std::min<int64_t>(25, s + 6) && Clock::now() < until) std::this_thread::yield();
        QCOMPARE(done.load(), std::min<int64_t>(25, s + 6));   // the window is full, and no more
        p.wait_ready(s, Deadline::after(10));
      }
    }
    QCOMPARE(twice.load(), 0);
    QCOMPARE(prepared.size(), std::size_t(75));
    for (const auto& [key, images] : prepared) QCOMPARE(images, 10 + key.second % 7);
    QCOMPARE(p.most_ahead(), int64_t(6));
  }

  // Step 3 is held back 50 ms after the replica starts waiting for it: the wait measures at
  // least that (steps 0-2 were ready, so they cost no wait worth the name).
  void a_held_step_is_waited_for() {
    std::atomic<bool> release{false};
    InputPipeline p(2, 4, {}, [&](int64_t step, int64_t) {
      while (step == 3 && !release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    p.begin_epoch(6, [](int64_t) { return 1; });
    for (int64_t s = 0; s < 3; ++s) p.wait_ready(s, Deadline::after(10));
    std::thread releaser([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release = true;
    });
    const double waited = p.wait_ready(3, Deadline::after(10));
    releaser.join();
    QVERIFY2(waited >= 0.045, qPrintable(QString::number(waited)));
    for (int64_t s = 4; s < 6; ++s) p.wait_ready(s, Deadline::after(10));
  }

  void a_stuck_loader_meets_the_deadline() {
    std::atomic<bool> release{false};
    InputPipeline p(1, 2, {}, [&](int64_t, int64_t) {
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    p.begin_epoch(3, [](int64_t) { return 1; });
    QVERIFY(test::expect_error<StallError>([&] { p.wait_ready(0, Deadline::after(0.1)); },
                                           {"input pipeline", "step 1", "--timeout"}));
    release = true;   // then the destructor joins the loader
  }

  // The costs: the latency is slept (wall time), the CPU work computed (the thread's CPU time).
  void costs_take_what_they_say() {
    const auto start = Clock::now();
    InputPipeline::pay(5, {0.004, 0}, [] { return false; });
    QVERIFY2(since(start) >= 0.020, qPrintable(QString::number(since(start))));
    const double cpu = thread_cpu_seconds();
    InputPipeline::pay(10, {0, 0.002}, [] { return false; });
    QVERIFY2(thread_cpu_seconds() - cpu >= 0.020, qPrintable(QString::number(thread_cpu_seconds() - cpu)));
    InputPipeline::pay(0, {1, 1}, [] { return false; });   // nothing to prepare: nothing paid
  }

  // A step of 100 images at 1 s each is being prepared when the pipeline goes: its loader
  // looks at the stop flag between slices, so the pipeline ends in well under the step's 100 s.
  void a_stop_does_not_wait_out_a_long_step() {
    const auto start = Clock::now();
    {
      InputPipeline p(2, 2, {1.0, 0});
      p.begin_epoch(4, [](int64_t) { return 100; });
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    QVERIFY2(since(start) < 10, qPrintable(QString::number(since(start))));
  }
};

QTEST_GUILESS_MAIN(TestInputPipeline)
#include "test_input_pipeline.moc"

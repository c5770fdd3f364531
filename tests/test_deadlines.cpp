// Deadlines everywhere (issue 17), without a GPU: a replica, device or process that is STUCK
// (alive, not failed, not arriving) must end the run in bounded time with a message naming
// it, just as a failed one does. The barrier of the thread communicator times out naming the
// replicas that did not arrive, but not while the last one runs a slow completion; the polled
// device wait times out naming the device and what the communicator knows about the ranks
// that stopped advancing; and whole runs end: GPU-like fake engines whose "device" collective
// (NCCL's semantics: a rank's step completes once every rank enqueued it) waits for a replica
// stuck inside a driver call (which the trainer then reports as stuck, once, and goes on
// waiting for), in one process and across two processes joined by a link.
#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/common/device_wait.h"
#include "comm/hierarchical_communicator.h"
#include "loopback_link.h"
#include "model/cnn_spec.h"
#include "test_support.h"
#include "trainer/mirrored_trainer.h"
#include "trainer/replica_threads.h"
#include "util/deadline.h"
#include "util/spin_barrier.h"

using namespace mb;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// NCCL's completion rule for a step's collective, for fake devices of several replicas (in
// one process or several): rank r's step s completes once every rank has enqueued step s.
class FakeDeviceCollective {
 public:
  explicit FakeDeviceCollective(int ranks) : enqueued_(std::size_t(ranks), 0) {}
  void enqueue(int rank, int64_t step) {
    std::lock_guard lock(m_);
    enqueued_[std::size_t(rank)] = step;
  }
  bool done(int64_t step) {
    std::lock_guard lock(m_);
    return *std::min_element(enqueued_.begin(), enqueued_.end()) >= step;
  }

 private:
  std::mutex m_;
  std::vector<int64_t> enqueued_;
};

// Where a replica stops without failing: inside "a driver call" that only the test releases.
struct StuckReplica {
  int rank = -1;
  int64_t step = 0;
  std::atomic<bool> reached{false}, release{false};
};

// A GPU-like engine: steps only enqueue; statistics are read at reports by a polled wait on
// the fake device (which needs every rank's step); progress is noted as the CUDA engine does.
class GpuLikeEngine final : public ReplicaEngine {
 public:
  GpuLikeEngine(std::shared_ptr<FakeDeviceCollective> device, std::shared_ptr<StuckReplica> stuck, int rank_offset)
      : device_(std::move(device)), stuck_(std::move(stuck)), rank_offset_(rank_offset) {}
  std::string device_name() const override { return "fake-gpu"; }
  const ModelSpec& model() const override { return model_; }
  const ModelSpec model_;
  void bind_data(const Dataset&, const Dataset&) override {}
  void set_params(std::span<const float>) override {}
  void get_params(std::span<float> p) const override { std::fill(p.begin(), p.end(), 0.0f); }
  BatchStats forward_backward(std::span<const int32_t> idx, float, PhaseTimes*) override { return stats(idx.size()); }
  float* grad_buffer() override { return nullptr; }
  void get_grads(std::span<float> g) const override { std::fill(g.begin(), g.end(), 0.0f); }
  void apply_adam(const AdamConfig&, int64_t) override {}
  BatchStats evaluate(std::span<const int32_t> idx) override { return stats(idx.size()); }
  BatchStats evaluate_train(std::span<const int32_t> idx) override { return stats(idx.size()); }
  int steps_per_report() const override { return 4; }

  void train_step(const TrainStep& step, Communicator& comm, const AdamConfig&, PhaseTimes&) override {
    rank_ = comm.rank();
    comm.note_progress(step.adam_step);
    if (rank_ == stuck_->rank && step.adam_step == stuck_->step) {
      stuck_->reached = true;
      while (!stuck_->release) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no polling
      throw DeviceError("released by the test");
    }
    device_->enqueue(rank_offset_ + rank_, step.adam_step);
    last_ = step.adam_step;
    pending_ += stats(step.indices.size());
  }
  BatchStats take_train_stats() override {
    wait_polling([&] { return device_->done(last_); }, comm_of_last(), {}, "fake-gpu:" + std::to_string(rank_));
    return std::exchange(pending_, BatchStats{});
  }
  void warm_up(std::span<const StepShape>, Communicator& comm) override { comm_ = &comm; }

 private:
  Communicator* comm_of_last() const { return comm_; }
  static BatchStats stats(std::size_t n) {
    BatchStats s;
    s.samples = int64_t(n);
    s.loss_sum = 0.5 * double(n);
    return s;
  }
  std::shared_ptr<FakeDeviceCollective> device_;
  std::shared_ptr<StuckReplica> stuck_;
  const int rank_offset_;
  int rank_ = -1;
  int64_t last_ = 0;
  Communicator* comm_ = nullptr;
  BatchStats pending_;
};

TrainConfig config(const std::string& devices, double timeout_s) {
  TrainConfig c;
  c.devices = parse_devices(devices);
  c.backend = Backend::Reference;
  c.batch = 32;
  c.epochs = 2;
  c.timeout_s = timeout_s;
  return c;
}

// A link that can tell which peer is not answering (what MpiLink's pings find).
class DiagnosingLink final : public ProcessLink {
 public:
  explicit DiagnosingLink(std::shared_ptr<ProcessLink> inner) : inner_(std::move(inner)) {}
  const ProcessInfo& info() const override { return inner_->info(); }
  std::string name() const override { return inner_->name(); }
  void all_reduce_sum(float* d, std::size_t n) override { inner_->all_reduce_sum(d, n); }
  void broadcast(void* d, std::size_t b, int root) override { inner_->broadcast(d, b, root); }
  void all_gather(const void* m, std::size_t b, void* all) override { inner_->all_gather(m, b, all); }
  void barrier() override { inner_->barrier(); }
  void request_abort(const std::string& r) override { inner_->request_abort(r); }
  std::string diagnose_peers() override { return "process 1 (loopback) does not answer"; }

 private:
  std::shared_ptr<ProcessLink> inner_;
};

}  // namespace

class TestDeadlines : public QObject {
  Q_OBJECT

 private slots:
  void deadline_basics() {
    QVERIFY(!Deadline::never().finite());
    QVERIFY(!Deadline::never().passed());
    QVERIFY(!Deadline::after(0).finite());  // not positive: no limit (callers validate --timeout)
    const Deadline d = Deadline::after(0.05);
    QVERIFY(d.finite() && !d.passed());
    std::this_thread::sleep_for(std::chrono::milliseconds(80));
    QVERIFY(d.passed());
    QCOMPARE(d.seconds(), 0.05);
  }

  void barrier_times_out_and_aborts() {
    SpinBarrier barrier(2, 0.2);
    const auto t0 = Clock::now();
    QVERIFY_THROWS_EXCEPTION(BarrierTimeout, barrier.arrive_and_wait());
    QVERIFY(since(t0) >= 0.2);
    QVERIFY_THROWS_EXCEPTION(BarrierAborted, barrier.arrive_and_wait());  // the group is failed now
  }

  void slow_completion_is_not_a_timeout() {
    // Every party arrived; the last one's completion (a link collective, which has a deadline
    // of its own) outlasts the barrier's timeout: nobody may give up.
    SpinBarrier barrier(2, 0.1);
    std::atomic<int> done{0};
    test::finishes_within(10, [&] {
      std::thread late([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        barrier.arrive_and_wait([] { std::this_thread::sleep_for(std::chrono::milliseconds(400)); });
        ++done;
      });
      barrier.arrive_and_wait();
      ++done;
      late.join();
    });
    QCOMPARE(done.load(), 2);
  }

  void thread_communicator_names_the_replica_that_did_not_arrive() {
    auto comms = make_thread_communicators(3, 0.3);
    QCOMPARE(comms[0]->timeout_s(), 0.3);
    std::vector<std::string> errors(3);
    std::atomic<bool> release{false};
    test::finishes_within(10, [&] {
      std::vector<std::thread> threads;
      for (int r = 0; r < 3; ++r)
        threads.emplace_back([&, r] {
          if (r == 2) {  // stuck, not failed: never arrives
            while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            return;
          }
          comms[std::size_t(r)]->note_progress(7);
          try {
            comms[std::size_t(r)]->all_gather<int32_t>(r);
          } catch (const StallError& e) {
            errors[std::size_t(r)] = e.what();
          } catch (const BarrierAborted&) {
            errors[std::size_t(r)] = "aborted";
          }
        });
      std::this_thread::sleep_for(std::chrono::milliseconds(800));
      release = true;
      for (auto& t : threads) t.join();
    });
    // One waiter timed out and named replica 2; the other was released by that failure.
    const std::string stall = errors[0] != "aborted" ? errors[0] : errors[1];
    QVERIFY2(stall.find("for replica 2, which did not arrive") != std::string::npos, stall.c_str());
    QVERIFY2(stall.find("--timeout") != std::string::npos, stall.c_str());
    QVERIFY2(stall.find("replica 2 step 0") != std::string::npos, stall.c_str());  // it never started a step
  }

  void device_wait_has_a_deadline() {
    auto comms = make_thread_communicators(2, 0.3);
    comms[0]->note_progress(64);
    comms[1]->note_progress(3);
    int released = 0;
    std::string message;
    const auto t0 = Clock::now();
    test::finishes_within(10, [&] {  // without a deadline the wait would never end
      try {
        wait_polling([] { return false; }, comms[0].get(), [&] { ++released; }, "cuda:0 TestGPU");
      } catch (const StallError& e) {
        message = e.what();
      }
    });
    QVERIFY(since(t0) >= 0.3);  // not before its deadline
    const QString m = QString::fromStdString(message);
    QVERIFY2(m.startsWith("cuda:0 TestGPU: its queued work has not finished within 0.3 s (--timeout)"),
             message.c_str());
    QVERIFY2(m.contains("replica 1 step 3"), message.c_str());  // the one that stopped advancing
    // Not released on a deadline: on a stuck device the release could block in the driver
    // before the failure is known (the engine releases its work when it is destroyed).
    QCOMPARE(released, 0);
  }

  void join_reports_a_thread_stuck_after_a_failure() {
    ReplicaThreads threads(2);
    std::atomic<bool> release{false}, failed{false};
    threads.start(0, [&] { failed = true; });
    threads.start(1, [&] {
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    std::vector<int> reported;
    int calls = 0;
    const auto t0 = Clock::now();
    threads.join([&] { return failed.load(); }, 0.3,
                 [&](const std::vector<int>& stuck) {
                   ++calls;
                   reported = stuck;
                   QVERIFY(since(t0) >= 0.3);
                   release = true;  // what a front end cannot do; the test lets the join finish
                 });
    QCOMPARE(calls, 1);
    QCOMPARE(reported, std::vector<int>{1});
    QVERIFY(QString::fromStdString(stuck_threads_message({1}, 0.3)).contains("replica 1 did not end within"));
  }

  void stuck_replica_ends_a_run_in_bounded_time() {
    // Replica 1 sticks "inside the driver" at step 3 (no polling, no failure); replica 0's
    // device collective waits for its part: replica 0's polled wait ends at --timeout naming
    // the replica that stopped advancing, the trainer reports replica 1 stuck after the grace
    // period (once), and the run ends failed as soon as the stuck thread lets go.
    auto data = test::make_synthetic_split(256, 32);
    const double timeout = 0.5;
    MirroredTrainer t(config("cpu:2", timeout), data);
    auto device = std::make_shared<FakeDeviceCollective>(2);
    auto stuck = std::make_shared<StuckReplica>();
    stuck->rank = 1;
    stuck->step = 3;
    t.set_engine_factory([&](const DeviceSpec&, int) { return std::make_unique<GpuLikeEngine>(device, stuck, 0); });
    TrainObserver observer;
    int stuck_calls = 0;
    RunRecord at_stuck;
    observer.on_stuck = [&](const RunRecord& r) {
      ++stuck_calls;
      at_stuck = r;
      stuck->release = true;
    };
    RunRecord r;
    test::finishes_within(20, [&] { r = t.run(observer); });
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(r.error).contains("--timeout"), r.error.c_str());
    QVERIFY2(QString::fromStdString(r.error).contains("replica 1 step 3"), r.error.c_str());
    QCOMPARE(stuck_calls, 1);
    QCOMPARE(at_stuck.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(at_stuck.error).contains("replica 1 did not end within 1 s after the run failed"),
             at_stuck.error.c_str());
  }

  void stuck_process_ends_the_others_in_bounded_time() {
    // Two processes of one replica each, joined by a link; process 1's replica sticks at step
    // 3. Process 0's device wait ends at --timeout with what the link knows about its peers,
    // and process 0's run ends without waiting for process 1 (which the launcher would kill).
    auto data = test::make_synthetic_split(256, 32);
    const double timeout = 0.5;
    auto links = test::make_loopback_links(2);
    auto device = std::make_shared<FakeDeviceCollective>(2);
    auto stuck = std::make_shared<StuckReplica>();
    stuck->rank = 1;
    stuck->step = 3;
    std::vector<RunRecord> records(2);
    test::finishes_within(20, [&] {
      std::vector<std::thread> processes;
      for (int p = 0; p < 2; ++p)
        processes.emplace_back([&, p] {
          auto link = std::make_shared<DiagnosingLink>(links[std::size_t(p)]);
          MirroredTrainer t(config("cpu:1", timeout), data, link);
          t.set_engine_factory(
              [&](const DeviceSpec&, int) { return std::make_unique<GpuLikeEngine>(device, stuck, 0); });
          records[std::size_t(p)] = t.run();
          if (p == 0) stuck->release = true;  // the launcher would kill process 1 now
        });
      for (auto& th : processes) th.join();
    });
    // Process 1 is released only after process 0's run returned: had process 0 waited for
    // it, the guard above would have failed.
    QCOMPARE(records[0].status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(records[0].error).contains("process 1 (loopback) does not answer"),
             records[0].error.c_str());
    QCOMPARE(records[1].status, RunStatus::Failed);
  }
};

QTEST_GUILESS_MAIN(TestDeadlines)
#include "test_deadlines.moc"

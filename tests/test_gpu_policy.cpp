// The GPU path's decisions, tested without a GPU: the polled device wait that a failed rank
// ends (device_wait.h), the collective CUDA-graph decision (step_graphs.h), and the trainer
// around engines that behave like the CUDA engine (fake engines through
// MirroredTrainer::set_engine_factory): an injected failure while the other replicas' devices
// are stuck in a collective ends the run with the failing replica's message, the warm-up is
// untimed and sees every step shape, statistics are read every steps_per_report() steps, and
// --precision tf32 is refused for CPU replicas. Also the convolution algorithm policy (FP32
// never takes a tensor-op algorithm; the ranks' measured timings pick one algorithm per pass
// by one rule), the CUDA engine's options (--cuda-path, --no-cuda-graphs, --cudnn-tune,
// --inject-fault: rows of the option table) and
// how long an injected fault may keep the device busy (a few x --timeout), when a failed NCCL
// initialisation falls back to the in-GPU communicator (one rank only), and that the run
// record gets the engine's count of graph and eager steps at the end of the run.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "util/on_threads.h"
#include "backends/common/conv_algo_policy.h"
#include "backends/common/cuda_options.h"
#include "backends/common/device_wait.h"
#include "backends/common/nccl_fallback.h"
#include "config/precision.h"
#include "config/train_options.h"
#include "trainer/run_check.h"
#include "backends/common/step_graphs.h"
#include "backends/devices.h"
#include "model/cnn_spec.h"
#include "test_support.h"
#include "trainer/mirrored_trainer.h"
#include "util/error.h"
#include "util/spin_barrier.h"

using namespace mb;
using Shape = ReplicaEngine::StepShape;

namespace {

// A communicator whose own collectives failed asynchronously (what NCCL reports through
// ncclCommGetAsyncError).
class BrokenCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "broken"; }
  void all_reduce_sum(float*, std::size_t) override {}
  void broadcast_bytes(void*, std::size_t, int) override {}
  void all_gather_bytes(const void*, std::size_t, void*) override {}
  void barrier() override {}
  void abort(const std::string&) override {}
  void check() override { throw DeviceError("nccl: remote error on rank 1"); }
};

// What the fake engines of one run share: their calls, in order, per rank.
struct Journal {
  std::mutex m;
  std::map<int, std::vector<std::string>> calls;
  std::map<int, std::vector<Shape>> shapes;
  std::atomic<int> stuck{0}, released{0}, destroyed{0}, takes{0};
  void add(int rank, std::string what) {
    std::lock_guard lock(m);
    calls[rank].push_back(std::move(what));
  }
};

struct Script {
  int fail_rank = -1;          // this rank throws in train_step at fail_step ...
  int64_t fail_step = 0;
  bool others_stuck = false;   // ... while the others' devices never finish that step
  double warm_up_s = 0;        // warm_up takes this long
  int steps_per_report = 1;
};

// Behaves like the CUDA engine where the trainer can see it: a collective warm-up, steps
// that only enqueue, statistics read at reports, waits that poll the communicator.
class FakeEngine final : public ReplicaEngine {
 public:
  FakeEngine(Script script, std::shared_ptr<Journal> journal) : script_(script), journal_(std::move(journal)) {}
  ~FakeEngine() override { ++journal_->destroyed; }

  std::string device_name() const override { return "fake"; }
  const ModelSpec& model() const override { return model_; }
  const ModelSpec model_;
  void bind_data(const Dataset&, const Dataset&) override {}
  void set_params(std::span<const float> p) override { params_.assign(p.begin(), p.end()); }
  void get_params(std::span<float> p) const override { std::copy(params_.begin(), params_.end(), p.begin()); }
  BatchStats forward_backward(std::span<const int32_t> idx, float, PhaseTimes*) override { return stats_of(idx.size()); }
  float* grad_buffer() override { return grads_.data(); }
  void get_grads(std::span<float> g) const override { std::fill(g.begin(), g.end(), 0.0f); }
  void apply_adam(const AdamConfig&, int64_t) override {}
  BatchStats evaluate(std::span<const int32_t> idx) override { return stats_of(idx.size()); }
  BatchStats evaluate_train(std::span<const int32_t> idx) override { return stats_of(idx.size()); }
  int steps_per_report() const override { return script_.steps_per_report; }
  CommProfile comm_profile() const override { return profile_; }
  // As the CUDA engine counts: here the full global batch "replays a graph", a smaller one
  // (the epoch's last step) runs eagerly.
  EngineReport engine_report() const override {
    EngineReport r;
    r.path = "fake";
    r.graph_steps = graph_steps_;
    r.eager_steps = eager_steps_;
    return r;
  }

  void begin_epoch(std::span<const int32_t> order) override {
    journal_->add(rank_, fmt::format("begin_epoch {}", order.size()));
  }

  void warm_up(std::span<const StepShape> shapes, Communicator& comm) override {
    rank_ = comm.rank();
    journal_->add(rank_, "warm_up");
    {
      std::lock_guard lock(journal_->m);
      journal_->shapes[rank_].assign(shapes.begin(), shapes.end());
    }
    if (script_.warm_up_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(script_.warm_up_s));
    comm.barrier();   // collective, as the real one is
    full_batch_ = shapes.empty() ? 0 : shapes.front().global_batch;
    graph_steps_ = eager_steps_ = 0;
    profile_.replicas = comm.size();
    profile_.exposed_s = 1e-6;
  }

  void train_step(const TrainStep& step, Communicator& comm, const AdamConfig&, PhaseTimes& times) override {
    rank_ = comm.rank();
    if (step.adam_step == script_.fail_step) {
      if (rank_ == script_.fail_rank) {
        // Fail once the others are stuck, so that the test sees them released (and not
        // aborted at an earlier collective because their threads were slow).
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (script_.others_stuck && journal_->stuck < comm.size() - 1 && std::chrono::steady_clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        throw DeviceError(fmt::format("injected failure on replica {}", rank_));
      }
      if (script_.others_stuck) {
        // A GPU spinning in an NCCL kernel that waits for the failed replica.
        ++journal_->stuck;
        wait_polling([] { return false; }, &comm, [this] { ++journal_->released; });
      }
    }
    pending_ += stats_of(step.indices.size());
    times[phase::AllReduce] += profile_.exposed_s;
    ++(step.global_batch == full_batch_ ? graph_steps_ : eager_steps_);
  }

  BatchStats take_train_stats() override {
    ++journal_->takes;
    return std::exchange(pending_, BatchStats{});
  }

 private:
  static BatchStats stats_of(std::size_t n) {
    BatchStats s;
    s.samples = int64_t(n);
    s.loss_sum = 0.5 * double(n);
    s.correct = int64_t(n / 2);
    return s;
  }

  Script script_;
  std::shared_ptr<Journal> journal_;
  int rank_ = -1;
  std::vector<float> params_ = std::vector<float>(cnn::kReferenceParams);
  std::vector<float> grads_ = std::vector<float>(cnn::kReferenceParams);
  BatchStats pending_;
  CommProfile profile_;
  int64_t full_batch_ = 0, graph_steps_ = 0, eager_steps_ = 0;
};

TrainConfig fake_config(const std::string& devices, int64_t batch, int epochs) {
  TrainConfig c;
  c.devices = parse_devices(devices);
  c.backend = Backend::Reference;
  c.batch = batch;
  c.epochs = epochs;
  c.seed = 5;
  return c;
}

RunRecord run_fake(MirroredTrainer& t, Script script, std::shared_ptr<Journal> journal) {
  t.set_engine_factory([script, journal](const DeviceSpec&, int) { return std::make_unique<FakeEngine>(script, journal); });
  RunRecord r;
  test::finishes_within(10, [&] { r = t.run(); });
  return r;
}

}  // namespace

class TestGpuPolicy : public QObject {
  Q_OBJECT

 private slots:
  // --- the polled wait -----------------------------------------------------------------

  void wait_returns_when_the_device_is_done() {
    auto comms = make_thread_communicators(1);
    int polls = 0, failures = 0;
    wait_polling([&] { return ++polls >= 5; }, comms[0].get(), [&] { ++failures; });
    QCOMPARE(polls, 5);
    QCOMPARE(failures, 0);
    wait_polling([&] { return true; }, nullptr);   // no communicator: plain polling
  }

  void wait_ends_when_another_rank_fails() {
    auto comms = make_thread_communicators(2);
    int failures = 0;
    bool aborted = false;
    test::finishes_within(10, [&] {
      std::thread peer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        comms[1]->abort("replica 1 failed");
      });
      try {
        wait_polling([] { return false; }, comms[0].get(), [&] { ++failures; });
      } catch (const BarrierAborted&) {
        aborted = true;
      }
      peer.join();
    });
    QVERIFY(aborted);
    QCOMPARE(failures, 1);   // the engine's release (graphs, then the collectives) ran once
  }

  void wait_reports_the_communicators_own_error() {
    BrokenCommunicator comm;
    int failures = 0;
    try {
      wait_polling([] { return false; }, &comm, [&] { ++failures; });
      QFAIL("the wait returned");
    } catch (const DeviceError& e) {
      QVERIFY2(QString(e.what()).contains("remote error"), e.what());
    }
    QCOMPARE(failures, 1);
  }

  // --- the collective graph decision ---------------------------------------------------

  void graphs_are_agreed_by_every_rank_data() {
    QTest::addColumn<int>("unwilling_rank");       // -1: every rank wants graphs
    QTest::addColumn<int>("failing_rank");         // its capture of the second shape fails
    QTest::addColumn<QList<qint64>>("agreed");
    QTest::newRow("all capture") << -1 << -1 << QList<qint64>{128, 126};
    QTest::newRow("one rank without graphs") << 2 << -1 << QList<qint64>{};
    QTest::newRow("one capture fails") << -1 << 1 << QList<qint64>{128};
  }
  void graphs_are_agreed_by_every_rank() {
    QFETCH(int, unwilling_rank);
    QFETCH(int, failing_rank);
    QFETCH(QList<qint64>, agreed);
    // 3 GPUs at global 128 (shares 43/43/42), the last batch of 126 (42 each): the shapes
    // that made ranks disagree when each rank keyed its graphs by its own share.
    const int ranks = 3;
    auto comms = make_thread_communicators(ranks);
    struct Seen {
      std::vector<int64_t> eager, captured, discarded, replayed;
      std::set<int64_t> result;
    };
    std::vector<Seen> seen(ranks);
    on_threads(ranks, [&](int r) {
      const int64_t share128 = r < 2 ? 43 : 42;
      // The last shape repeats the first: decided once.
      const std::vector<Shape> shapes = {{share128, 128}, {42, 126}, {share128, 128}};
      GraphWarmUpSteps steps;
      Seen& s = seen[std::size_t(r)];
      steps.eager_step = [&](const Shape& sh) { s.eager.push_back(sh.global_batch); };
      steps.capture = [&](const Shape& sh) {
        s.captured.push_back(sh.global_batch);
        return !(r == failing_rank && sh.global_batch == 126);
      };
      steps.discard = [&](const Shape& sh) { s.discarded.push_back(sh.global_batch); };
      steps.replay = [&](const Shape& sh) { s.replayed.push_back(sh.global_batch); };
      s.result = agree_on_step_graphs(shapes, *comms[std::size_t(r)], r != unwilling_rank, steps);
    });
    const std::set<int64_t> want(agreed.begin(), agreed.end());
    for (int r = 0; r < ranks; ++r) {
      const Seen& s = seen[std::size_t(r)];
      QVERIFY2(s.result == want, qPrintable(QString("rank %1 decided otherwise").arg(r)));
      QCOMPARE(s.eager, (std::vector<int64_t>{128, 126, 128}));   // every shape warmed, graphs or not
      QCOMPARE(s.replayed, std::vector<int64_t>(want.rbegin(), want.rend()));   // 128 before 126
      if (unwilling_rank >= 0) {
        QVERIFY(s.captured.empty());
      } else {
        QCOMPARE(s.captured, (std::vector<int64_t>{128, 126}));
        // Where the decision went against a rank's own successful capture, it drops it.
        const bool drops = failing_rank >= 0 && r != failing_rank;
        QCOMPARE(s.discarded, drops ? std::vector<int64_t>{126} : std::vector<int64_t>{});
      }
    }
  }

  // --- the trainer around GPU-like engines --------------------------------------------

  void injected_failure_releases_the_stuck_replicas() {
    // Replica 1 fails at step 3 while the devices of replicas 0 and 2 wait for its part of
    // the collective: the run must end (not hang) with replica 1's message.
    auto data = test::make_synthetic_split(512, 16);
    MirroredTrainer t(fake_config("cpu:3", 48, 2), data);
    auto journal = std::make_shared<Journal>();
    Script script;
    script.fail_rank = 1;
    script.fail_step = 3;
    script.others_stuck = true;
    script.steps_per_report = 4;
    const RunRecord r = run_fake(t, script, journal);
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(r.error).contains("injected failure on replica 1"), r.error.c_str());
    QCOMPARE(journal->released.load(), 2);    // both stuck replicas cancelled their device work
    QCOMPARE(journal->destroyed.load(), 3);   // and every engine was destroyed
    QVERIFY(r.epochs.empty());
  }

  void warm_up_is_untimed_and_sees_every_shape() {
    // 200 samples at global batch 64 over 2 replicas: steps of 64 (32 + 32) and a last one of
    // 8 (4 + 4); both shapes are prepared before the clock starts.
    auto data = test::make_synthetic_split(200, 16);
    MirroredTrainer t(fake_config("cpu:2", 64, 2), data);
    auto journal = std::make_shared<Journal>();
    Script script;
    script.warm_up_s = 0.2;
    const RunRecord r = run_fake(t, script, journal);
    QCOMPARE(r.status, RunStatus::Completed);
    QVERIFY2(r.warmup_s >= 0.2, qPrintable(QString::number(r.warmup_s)));
    QCOMPARE(r.epochs.size(), std::size_t(2));
    QCOMPARE(r.comm.replicas, 2);   // the engine's profile reaches the record
    for (int rank = 0; rank < 2; ++rank) {
      const auto& calls = journal->calls[rank];
      QVERIFY(calls.size() >= 3);
      QCOMPARE(QString::fromStdString(calls[0]), QString("warm_up"));   // before any epoch
      QCOMPARE(QString::fromStdString(calls[1]), QString("begin_epoch 200"));
      QCOMPARE(std::count(calls.begin(), calls.end(), std::string("warm_up")), std::ptrdiff_t(1));
      const auto& shapes = journal->shapes[rank];
      QCOMPARE(shapes.size(), std::size_t(2));
      QCOMPARE(shapes[0].global_batch, int64_t(64));
      QCOMPARE(shapes[0].share, int64_t(32));
      QCOMPARE(shapes[1].global_batch, int64_t(8));
      QCOMPARE(shapes[1].share, int64_t(4));
    }
  }

  void statistics_are_read_every_report() {
    // 4 steps per epoch, a report every 3 steps: after step 3 and at the epoch's end, per
    // replica; the statistics of all steps arrive (loss 0.5 and accuracy 0.5 per sample).
    auto data = test::make_synthetic_split(256, 16);
    MirroredTrainer t(fake_config("cpu:2", 64, 2), data);
    auto journal = std::make_shared<Journal>();
    Script script;
    script.steps_per_report = 3;
    const RunRecord r = run_fake(t, script, journal);
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(journal->takes.load(), 2 /*replicas*/ * 2 /*epochs*/ * 2 /*reports*/);
    for (const auto& e : r.epochs) {
      QCOMPARE(e.train_loss, 0.5);
      QCOMPARE(e.train_acc, 0.5);
      QVERIFY(e.allreduce_s >= 4 * 1e-6);   // each step's exposed communication, as the engine reported it
    }
  }

  void the_record_counts_graph_and_eager_steps() {
    // 200 samples at global batch 64: steps of 64, 64, 64 and 8 per epoch. The record is
    // written at the warm-up, before any step: it must follow the engine's counts to the end.
    auto data = test::make_synthetic_split(200, 16);
    MirroredTrainer t(fake_config("cpu:2", 64, 2), data);
    const RunRecord r = run_fake(t, Script{}, std::make_shared<Journal>());
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(QString::fromStdString(r.engine.path), QString("fake"));
    QCOMPARE(r.engine.graph_steps, int64_t(6));
    QCOMPARE(r.engine.eager_steps, int64_t(2));
  }

  // --- precision ------------------------------------------------------------------------

  void tf32_needs_gpu_replicas() {
    TrainConfig c = fake_config("cpu:1", 64, 1);
    QVERIFY(check_run(c).empty());   // fp32, the default
    c.precision = Precision::Tf32;
    const auto problems = check_run(c);
    QCOMPARE(problems.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(problems[0].option), QString("precision"));
    QVERIFY2(QString::fromStdString(problems[0].message).contains("--precision tf32"), problems[0].message.c_str());
    QVERIFY_THROWS_EXCEPTION(ConfigError, require_runnable(c));
    QVERIFY(test::expect_error<ConfigError>([&] { set_option(train_option("precision"), c, "fp16"); }, "fp16"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_engine(DeviceSpec{}, Backend::OneDnn, 8, Precision::Tf32));
    QCOMPARE(parse_precision("tf32"), std::optional<Precision>(Precision::Tf32));
    QCOMPARE(to_string(Precision::Fp32), std::string_view("fp32"));

    auto data = test::make_synthetic_split(64, 8);
    MirroredTrainer t(fake_config("cpu:1", 64, 1), data);
    QCOMPARE(t.run_config().precision, Precision::Fp32);
  }

  // --- convolution algorithms ------------------------------------------------------------

  void fp32_never_takes_a_tensor_op_algorithm() {
    // The heuristic ranks a TF32 algorithm first (as cuDNN does on Hopper for tensor-op math).
    const AlgoInfo ranking[] = {
        {1, true, true, MathKind::TensorOp, 0},   {0, true, true, MathKind::Fma, 1024},
        {2, true, true, MathKind::Default, 0},    {5, true, true, MathKind::TensorOpAllowConversion, 0},
        {6, false, true, MathKind::Fma, 0},       // not supported
        {7, true, true, MathKind::Fma, 1u << 30},  // workspace beyond the limit
    };
    auto algos = [](const std::vector<AlgoInfo>& v) {
      std::vector<int> out;
      for (const auto& a : v) out.push_back(a.algo);
      return out;
    };
    const auto fp32 = allowed_candidates(ranking, Precision::Fp32, 256u << 20, false);
    QCOMPARE(algos(fp32), (std::vector<int>{0, 2}));
    for (const auto& a : fp32) QVERIFY(math_allowed(Precision::Fp32, a.math));
    QCOMPARE(algos(allowed_candidates(ranking, Precision::Tf32, 256u << 20, false)), (std::vector<int>{1, 0, 2, 5}));
    QVERIFY(!math_allowed(Precision::Fp32, MathKind::TensorOp));
    QVERIFY(!math_allowed(Precision::Fp32, MathKind::TensorOpAllowConversion));
    QVERIFY(math_allowed(Precision::Tf32, MathKind::TensorOp));
    // Measured fastest, the TF32 algorithm still never becomes an FP32 choice: only
    // candidates are measured, and the agreement picks among them.
    PassTimings t;
    t.participates = 1;
    for (std::size_t i = 0; i < fp32.size(); ++i) {
      t.us[std::size_t(fp32[i].algo)] = 50.0f + float(i);
      t.rank_order[std::size_t(fp32[i].algo)] = int8_t(i);
    }
    const auto agreed = choose_algorithms({{t}});
    QCOMPARE(agreed.front().algo, 0);
    QVERIFY(agreed.front().measured);
  }

  void nondeterministic_algorithms_only_when_asked() {
    const AlgoInfo ranking[] = {{3, true, false, MathKind::Fma, 0}, {0, true, true, MathKind::Fma, 0}};
    QCOMPARE(allowed_candidates(ranking, Precision::Fp32, 1u << 20, false).size(), std::size_t(1));
    const auto both = allowed_candidates(ranking, Precision::Fp32, 1u << 20, true);
    QCOMPARE(both.size(), std::size_t(2));
    QCOMPARE(both.front().algo, 0);   // deterministic first
  }

  void ranks_agree_on_the_fastest_for_the_slowest_rank() {
    auto timings = [](std::initializer_list<std::pair<int, float>> entries) {
      PassTimings t;
      t.participates = 1;
      int8_t order = 0;
      for (auto [a, us] : entries) t.us[std::size_t(a)] = us, t.rank_order[std::size_t(a)] = order++;
      return t;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // Algorithm 1 is fastest on rank 0 but slow on rank 1; 2 is good on both; 3 is not a
    // candidate on rank 1.
    std::vector<std::vector<PassTimings>> all = {{timings({{1, 10}, {2, 20}, {3, 5}})},
                                                 {timings({{1, 90}, {2, 25}})}};
    auto agreed = choose_algorithms(all);
    QCOMPARE(agreed.front().algo, 2);
    QCOMPARE(agreed.front().worst_us, 25.0f);
    // Rank 1 ran out of time before measuring anything: rank 0's ranking decides.
    all[1] = {timings({{2, nan}, {1, nan}})};
    agreed = choose_algorithms(all);
    QCOMPARE(agreed.front().algo, 1);
    QVERIFY(!agreed.front().measured);
    // A rank without samples has no opinion.
    PassTimings idle;
    all[1] = {idle};
    QCOMPARE(choose_algorithms(all).front().algo, 3);
    // Nothing in common: an error, not a guess.
    all = {{timings({{1, 10}})}, {timings({{2, 10}})}};
    QVERIFY_THROWS_EXCEPTION(DeviceError, choose_algorithms(all));
    // Collective: every rank gets the same answer from its own timings.
    auto comms = make_thread_communicators(2);
    std::vector<int> got(2);
    on_threads(2, [&](int r) {
      const PassTimings mine[] = {r == 0 ? timings({{1, 10}, {2, 20}}) : timings({{1, 90}, {2, 25}})};
      got[std::size_t(r)] = agree_on_algorithms(mine, *comms[std::size_t(r)]).front().algo;
    });
    QCOMPARE(got, (std::vector<int>{2, 2}));
  }

  // --- the CUDA engine's options -----------------------------------------------------------

  void cuda_options_parse() {
    // The table's rows reach the engine's view of them, each the field it names.
    TrainConfig c;
    set_option(train_option("cuda_path"), c, "fused");
    set_option(train_option("cuda_graphs"), c, "false");
    set_option(train_option("cudnn_tune"), c, "0.5");
    set_option(train_option("inject_fault"), c, "stall:30:1");
    const CudaOptions o = cuda_options(c.engine);
    QVERIFY(o.path == CudaPath::Fused && !o.graphs && o.tune_s == 0.5);
    QVERIFY(o.fault.kind == FaultKind::Stall && o.fault.step == 30 && o.fault.rank == 1);
    const CudaOptions d = cuda_options(TrainConfig{}.engine);
    QVERIFY(d.path == CudaPath::Cudnn && d.graphs && d.tune_s == 3 && !d.fault.active());
    QCOMPARE(to_string(CudaPath::Fused), std::string("fused"));
    QVERIFY(test::expect_error<ConfigError>([&] { set_option(train_option("cuda_path"), c, "fast"); }, "--cuda-path"));
    QVERIFY(test::expect_error<ConfigError>([&] { set_option(train_option("cudnn_tune"), c, "601"); }, "--cudnn-tune"));
    const FaultPlan none = parse_fault_plan("");
    QVERIFY(!none.active() && !none.hits(1, 0));
    const FaultPlan stall = parse_fault_plan("stall:30");
    QVERIFY(stall.kind == FaultKind::Stall && stall.step == 30 && stall.rank == 0);
    QVERIFY(stall.hits(30, 0) && !stall.hits(30, 1) && !stall.hits(29, 0));
    const FaultPlan abort = parse_fault_plan("abort:5:1");
    QVERIFY(abort.kind == FaultKind::Abort && abort.rank == 1);
    QCOMPARE(to_string(parse_fault_plan("hang:7")), std::string("hang:7:0"));
    for (const char* bad : {"stall", "stall:0", "stall:x", "melt:3", "abort:3:-1", "abort:3:1:2"})
      QVERIFY2(test::expect_error<ConfigError>([&] { parse_fault_plan(bad); }, "--inject-fault"), bad);
  }

  void an_injected_fault_spins_a_few_timeouts() {
    // A hang must outlast the stuck-thread path (the wait gives up after one --timeout, the
    // thread is reported stuck two --timeout later), and no more than that: the check's 5 s
    // gives 20 s, not 120 s that would overlap its next runs.
    QCOMPARE(fault_spin_cap_s(5), 20.0);
    for (double timeout : {0.5, 2.0, 5.0, 10.0, 25.0})
      QVERIFY2(fault_spin_cap_s(timeout) > 3 * timeout, qPrintable(QString::number(timeout)));
    QCOMPARE(fault_spin_cap_s(60), kFaultSpinMaxS);  // the default --timeout: the old 120 s cap
    QCOMPARE(fault_spin_cap_s(1e9), kFaultSpinMaxS);
    QCOMPARE(fault_spin_cap_s(0), kFaultSpinMaxS);  // no deadline known: the cap
    QCOMPARE(fault_spin_cap_s(std::numeric_limits<double>::quiet_NaN()), kFaultSpinMaxS);
  }

  void a_failed_one_rank_nccl_falls_back() {
    // One rank: NCCL would move no data, so a failed initialisation (an error, or one that
    // never finished) is no reason to fail the run; an abort always is, and so is any failure
    // with more ranks (their sums need NCCL).
    QVERIFY(nccl_init_falls_back(1, NcclInitFailure::Library));
    QVERIFY(nccl_init_falls_back(1, NcclInitFailure::TimedOut));
    QVERIFY(!nccl_init_falls_back(1, NcclInitFailure::Aborted));
    for (NcclInitFailure f : {NcclInitFailure::Library, NcclInitFailure::TimedOut, NcclInitFailure::Aborted}) {
      QVERIFY(!nccl_init_falls_back(2, f));
      QVERIFY(!nccl_init_falls_back(8, f));
    }
    const QString warning = QString::fromStdString(nccl_fallback_warning(0, "unhandled system error"));
    QVERIFY2(warning.contains("cuda:0") && warning.contains("unhandled system error") && warning.contains("in-GPU"),
             qPrintable(warning));
    QVERIFY(QString::fromUtf8(kNcclFallbackName.data(), int(kNcclFallbackName.size())).startsWith("in-gpu"));
  }
};

QTEST_GUILESS_MAIN(TestGpuPolicy)
#include "test_gpu_policy.moc"

// Processes against threads: the trainer run as P "processes" (one MirroredTrainer each,
// joined by loopback links, so no mpirun is needed) trains what the in-process trainer
// trains: bit for bit with one replica per process, closely with several; it checks that
// every process got the same data and options, and a failure in one process fails all of
// them with its reason. The same over real MPI processes is tests/mpi_run_test.sh.
#include <QTemporaryDir>
#include <QtTest>

#include <thread>

#include "loopback_link.h"
#include "trainer_fixtures.h"
#include "model/cnn_spec.h"
#include "model/model_text.h"
#include "test_support.h"
#include "trainer/mirrored_trainer.h"
#include "util/digest.h"
#include "util/error.h"

using namespace mb;

namespace {

// Two epochs, seed 5: the processes' runs.
TrainConfig small_config(const std::string& devices, int64_t batch = 32) {
  TrainConfig c = test::small_config(devices, "onednn", batch);
  c.epochs = 2;
  c.seed = 5;
  return c;
}

struct ProcessResult {
  RunRecord record;
  std::vector<float> params;
  std::string error;   // an exception from the constructor
};

// Runs one trainer per process, each on its own thread (constructor and run() are both
// collective), with per-process configurations and data.
std::vector<ProcessResult> run_processes(const std::vector<TrainConfig>& configs,
                                         const std::vector<std::shared_ptr<DataSplit>>& data,
                                         const std::vector<TrainObserver>& observers = {}) {
  const int processes = static_cast<int>(configs.size());
  auto links = test::make_loopback_links(processes);
  std::vector<ProcessResult> out(static_cast<std::size_t>(processes));
  std::vector<std::thread> threads;
  for (int p = 0; p < processes; ++p)
    threads.emplace_back([&, p] {
      try {
        MirroredTrainer t(configs[p], data[p], links[p]);
        out[p].record = t.run(observers.empty() ? TrainObserver{} : observers[p]);
        out[p].params = t.final_params();
      } catch (const std::exception& e) {
        out[p].error = e.what();
        links[p]->request_abort(e.what());
      }
    });
  for (auto& t : threads) t.join();
  return out;
}

// ||a - b|| / ||b||: how far two trainings of the same model ended apart, as a whole.
double relative_l2_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

}  // namespace

class TestTrainerProcesses : public QObject {
  Q_OBJECT
 private slots:
  void processes_train_what_threads_train_data() {
    QTest::addColumn<int>("processes");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("train");
    // 97 samples at batch 32: a last step of 1 sample, so most replicas get no share.
    QTest::addColumn<QString>("model");
    QTest::addRow("2 processes x 1, even") << 2 << 1 << 256 << "reference";
    QTest::addRow("2 processes x 1, partial") << 2 << 1 << 97 << "reference";
    QTest::addRow("2 processes x 2") << 2 << 2 << 256 << "reference";
    QTest::addRow("3 processes x 1") << 3 << 1 << 200 << "reference";
    // Colour images, same padding, dropout: the masks are the global sample's in any process.
    const char* colour = "12x12x3:conv6@3s-pool@s-drop20-conv8_nobias-gap-drop10-dense5";
    QTest::addRow("colour dropout, 2 processes x 1, partial") << 2 << 1 << 97 << colour;
    QTest::addRow("colour dropout, 2 processes x 2") << 2 << 2 << 256 << colour;
  }
  void processes_train_what_threads_train() {
    QFETCH(int, processes);
    QFETCH(int, threads);
    QFETCH(int, train);
    QFETCH(QString, model);
    const ModelSpec spec = model_from_text(model.toStdString());
    auto data = test::make_model_split(spec, train, 40);
    const int replicas = processes * threads;
    auto config = [&](int devices) {
      TrainConfig c = small_config(fmt::format("cpu:{}", devices));
      c.model = spec;
      return c;
    };

    MirroredTrainer flat(config(replicas), data);
    const RunRecord want = flat.run();
    QCOMPARE(want.status, RunStatus::Completed);

    const auto got = run_processes(std::vector<TrainConfig>(processes, config(threads)),
                                   std::vector<std::shared_ptr<DataSplit>>(processes, data));
    for (int p = 0; p < processes; ++p) {
      QVERIFY2(got[p].error.empty(), got[p].error.c_str());
      QCOMPARE(got[p].record.status, RunStatus::Completed);
      QCOMPARE(got[p].record.config.replicas, replicas);
      QCOMPARE(got[p].record.config.processes, processes);
      QCOMPARE(got[p].record.config.replicas_per_process, threads);
      QCOMPARE(QString::fromStdString(got[p].record.config.communicator), QString("loopback+threads"));
      QVERIFY(got[p].record.config.model == spec);
    }
    // Process 0 holds the record; the others only their status.
    const RunRecord& r = got[0].record;
    QCOMPARE(r.epochs.size(), std::size_t(2));
    for (int p = 1; p < processes; ++p) QVERIFY(got[p].record.epochs.empty());
    QVERIFY(r.replicas_in_sync);
    QCOMPARE(int(r.epochs[1].replica_times.size()), replicas);

    if (threads == 1) {
      // a + b == b + a: one replica per process sums exactly as the threads do.
      QVERIFY(got[0].params == flat.final_params());
      QCOMPARE(QString::fromStdString(r.epochs[1].param_digest), QString::fromStdString(want.epochs[1].param_digest));
      QCOMPARE(r.epochs[1].val_acc, want.epochs[1].val_acc);
    } else {
      // Per-process partial sums first: another order of additions, a few ulps per gradient
      // element and step. Adam divides by sqrt(v), so an element whose gradient hovers near
      // zero can take a step of either sign and drift by up to lr per step: no per-element
      // bound means much, but the parameters as a whole stay together (measured 5.6e-5 of
      // their norm after 16 steps on AVX-512; 1e-3 leaves room for other CPUs' kernels).
      const double diff = relative_l2_diff(got[0].params, flat.final_params());
      QVERIFY2(diff <= 1e-3, qPrintable(QString::number(diff)));
      QVERIFY(std::fabs(r.epochs[1].val_acc - want.epochs[1].val_acc) <= 1e-4 + 1.0 / 40);
    }
  }

  // Balanced shares: every process computes the same shares from the same gathered reports
  // (the trainer checks each step that the ranks' shares tile the batch), and the threads,
  // replaying the processes' share changes, train the very same bits.
  void balanced_processes_agree_with_threads() {
    auto data = test::make_synthetic_split(1024, 40);
    TrainConfig c = small_config("cpu:1", 64);
    c.epochs = 4;   // 64 steps: a change needs a proposal and its confirmation 16 steps later
    c.scenario.balance = true;
    c.scenario.straggler.replica = 1;
    c.scenario.straggler.factor = 10;
    const auto got = run_processes({c, c}, {data, data});
    for (const auto& g : got) {
      QVERIFY2(g.error.empty(), g.error.c_str());
      QCOMPARE(g.record.status, RunStatus::Completed);
    }
    const RunRecord& r = got[0].record;
    QVERIFY(r.replicas_in_sync);
    QVERIFY2(r.config.share_changes.size() >= 2, "the shares changed");

    QTemporaryDir dir;
    const std::string file = dir.filePath("processes.json").toStdString();
    write_run_json(r, file);
    TrainConfig threads = small_config("cpu:2", 64);
    threads.epochs = c.epochs;
    threads.scenario.shares_from = file;
    MirroredTrainer flat(threads, data);
    const RunRecord replay = flat.run();
    QCOMPARE(replay.status, RunStatus::Completed);
    QVERIFY(replay.config.share_changes == r.config.share_changes);
    QVERIFY(flat.final_params() == got[0].params);
    for (std::size_t e = 0; e < r.epochs.size(); ++e)
      QCOMPARE(QString::fromStdString(replay.epochs[e].param_digest), QString::fromStdString(r.epochs[e].param_digest));
  }

  void processes_must_load_identical_files() {
    auto a = test::make_synthetic_split(128, 20, 7), b = test::make_synthetic_split(128, 20, 8);
    const auto got = run_processes({small_config("cpu:1"), small_config("cpu:1")}, {a, b});
    for (const auto& g : got) {
      QVERIFY2(QString::fromStdString(g.error).contains("data set of process 1 on host loopback"), g.error.c_str());
      QVERIFY2(QString::fromStdString(g.error).contains("same files"), g.error.c_str());
    }
  }

  void processes_must_get_the_same_options() {
    auto data = test::make_synthetic_split(128, 20);
    TrainConfig other = small_config("cpu:1");
    other.seed = 6;
    const auto got = run_processes({small_config("cpu:1"), other}, {data, data});
    for (const auto& g : got)
      QVERIFY2(QString::fromStdString(g.error).contains("same command line"), g.error.c_str());
  }

  void a_failure_in_one_process_fails_every_process() {
    auto data = test::make_synthetic_split(512, 20);
    std::vector<TrainObserver> observers(2);
    observers[0].on_step = [](const StepProgress& p) {
      if (p.step >= 3) throw std::runtime_error("observer broke at step 3");   // reports come at most every 50 ms
    };
    const auto got = run_processes({small_config("cpu:1"), small_config("cpu:1")}, {data, data}, observers);
    QCOMPARE(got[0].record.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(got[0].record.error).contains("observer broke at step 3"),
             got[0].record.error.c_str());
    QCOMPARE(got[1].record.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(got[1].record.error).contains("process 0") &&
                 QString::fromStdString(got[1].record.error).contains("observer broke at step 3"),
             got[1].record.error.c_str());
  }

  void a_stop_in_one_process_stops_every_process() {
    auto data = test::make_synthetic_split(1024, 20);
    std::atomic<MirroredTrainer*> second{nullptr};
    // Process 1 has no observer (only process 0 reports), so the stop comes from process 0's
    // observer asking process 1's trainer: a stop anywhere stops everywhere, at one step.
    auto links = test::make_loopback_links(2);
    RunRecord records[2];
    std::thread t1([&] {
      MirroredTrainer t(small_config("cpu:1"), data, links[1]);
      second = &t;
      records[1] = t.run();
      second = nullptr;
    });
    MirroredTrainer t0(small_config("cpu:1"), data, links[0]);
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      if (p.step >= 2 && second) second.load()->request_stop();
    };
    records[0] = t0.run(obs);
    t1.join();
    for (const auto& r : records) {
      QCOMPARE(r.status, RunStatus::Stopped);
      QVERIFY(r.epochs.empty());   // within the first epoch, in both processes
    }
  }
};

QTEST_GUILESS_MAIN(TestTrainerProcesses)
#include "test_trainer_processes.moc"

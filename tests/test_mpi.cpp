// Runs across processes as users start them: the real mirrorbench-cli under the real
// `mpirun` (Open MPI), over shared memory and loopback only (--mca btl self,vader --mca
// oob_tcp_if_include lo). 2 processes x 1 replica train bit for bit what the in-process
// cpu:2 trains; 2 x 2 is hierarchical (threads, then MPI) and close to cpu:4; a process that
// dies (kill -9) or stops (SIGSTOP) ends the run in bounded time with a message naming it,
// leaves no process behind and still gets a record from process 0; processes that load
// different data refuse to train. Skipped, with the reason, where mpirun is absent.
#include <QtTest>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "mpi_runs.h"
#include "records/run_record.h"
#include "test_support.h"

namespace {

using mb::test::finish;
using mb::test::Result;
using mb::test::run;
using mb::test::ranks_of;
using mb::test::alive;

QString mpirun_path() { return QStandardPaths::findExecutable("mpirun"); }

QStringList mpirun_args(int processes) {
  return {"--allow-run-as-root", "--mca",         "btl", "self,vader", "--mca", "oob_tcp_if_include",
          "lo",                  "--oversubscribe", "-np", QString::number(processes)};
}

}  // namespace

class TestMpi : public QObject {
  Q_OBJECT
  mb::test::TrainScratch runs_;
  QString mpirun_;

  // The same training on threads in one process (`thread_devices`) and under mpirun
  // (`processes` processes of `per_process` each): both records, the launch's output, and
  // what failed (empty when both ran).
  struct ThreadsAndProcesses {
    mb::RunRecord threads, processes;
    Result launch;
    QString failed;
  };
  ThreadsAndProcesses threads_and_processes(const QStringList& opts, const QString& thread_devices, int processes,
                                            const QString& per_process, const QString& name) const {
    ThreadsAndProcesses out;
    const QString t_json = runs_.path("t-" + name + ".json"), p_json = runs_.path("p-" + name + ".json");
    const Result threads = run(MB_CLI_PATH, runs_.train(opts + QStringList{"--devices", thread_devices, "--json", t_json}).mid(1));
    if (threads.exit_code != 0) out.failed = "threads: " + threads.err;
    out.launch = run(mpirun_, mpirun_args(processes) + runs_.train(opts + QStringList{"--devices", per_process, "--json", p_json}));
    if (out.launch.exit_code != 0) out.failed += "processes: " + out.launch.err;
    if (!out.failed.isEmpty()) return out;
    out.threads = mb::read_run_json(t_json.toStdString());
    out.processes = mb::read_run_json(p_json.toStdString());
    return out;
  }

 private slots:
  void initTestCase() {
    mpirun_ = mpirun_path();
    if (mpirun_.isEmpty()) QSKIP("mpirun is not installed (Debian: openmpi-bin): multi-process runs untested here");
    QVERIFY(runs_.make());
  }

  void two_processes_train_what_two_threads_train() {
    const auto both = threads_and_processes({"--epochs", "2", "--batch", "64"}, "cpu:2", 2, "cpu:1", "2");
    QVERIFY2(both.failed.isEmpty(), qPrintable(both.failed));
    const mb::RunRecord &t = both.threads, &p = both.processes;
    const Result& procs = both.launch;
    QCOMPARE(p.config.processes, 2);
    QCOMPARE(p.config.replicas, 2);
    QCOMPARE(QString::fromStdString(p.config.communicator), QString("mpi+threads"));
    QVERIFY(p.replicas_in_sync);
    QCOMPARE(p.epochs.size(), std::size_t(2));
    // One replica per process: the very same bits as the threads, after every epoch.
    for (std::size_t e = 0; e < 2; ++e) {
      QCOMPARE(QString::fromStdString(p.epochs[e].param_digest), QString::fromStdString(t.epochs[e].param_digest));
      QCOMPARE(p.epochs[e].val_acc, t.epochs[e].val_acc);
    }
    // Only process 0 printed (mpirun gives the ranks a terminal, hence the progress bar too).
    QCOMPARE(procs.out.count("epoch 2/2  time"), 1);
    QCOMPARE(procs.out.count("mean epoch time"), 1);
  }

  void three_processes_train_what_three_threads_train() {
    // The link sums each element in process order, as the threads sum in rank order: with one
    // replica per process the same bits for any count, not only for two (where a + b = b + a).
    const auto both = threads_and_processes({"--epochs", "1", "--batch", "96"}, "cpu:3", 3, "cpu:1", "3");
    QVERIFY2(both.failed.isEmpty(), qPrintable(both.failed));
    const mb::RunRecord &t = both.threads, &p = both.processes;
    QCOMPARE(p.config.processes, 3);
    QCOMPARE(QString::fromStdString(p.epochs.back().param_digest), QString::fromStdString(t.epochs.back().param_digest));
  }

  // A compressed all-reduce: the MPI link packs 16-bit values (half the bytes) and sums them in
  // FP32 in process order, the threads round in shared memory: the same bits either way.
  void compressed_processes_train_what_compressed_threads_train_data() {
    QTest::addColumn<QString>("wire");
    QTest::addRow("bf16") << "bf16";
    QTest::addRow("fp16") << "fp16";
  }
  void compressed_processes_train_what_compressed_threads_train() {
    QFETCH(QString, wire);
    const auto both = threads_and_processes({"--epochs", "1", "--batch", "96", "--allreduce-dtype", wire}, "cpu:3", 3,
                                            "cpu:1", "wire-" + wire);
    QVERIFY2(both.failed.isEmpty(), qPrintable(both.failed));
    const mb::RunRecord &t = both.threads, &p = both.processes;
    QCOMPARE(QString::fromStdString(std::string(mb::wire_name(p.config.scenario.allreduce_dtype))), wire);
    QVERIFY(p.replicas_in_sync);
    QCOMPARE(QString::fromStdString(p.epochs.back().param_digest), QString::fromStdString(t.epochs.back().param_digest));
  }

  // PowerSGD: the factors' sums are the same in processes and in threads, so are the bits.
  void powersgd_processes_train_what_powersgd_threads_train() {
    const auto both = threads_and_processes({"--epochs", "1", "--batch", "96", "--powersgd", "2"}, "cpu:3", 3, "cpu:1",
                                            "powersgd");
    QVERIFY2(both.failed.isEmpty(), qPrintable(both.failed));
    const mb::RunRecord &t = both.threads, &p = both.processes;
    QCOMPARE(p.config.scenario.powersgd_rank, 2);
    QVERIFY(p.replicas_in_sync);
    QCOMPARE(QString::fromStdString(p.epochs.back().param_digest), QString::fromStdString(t.epochs.back().param_digest));
  }

  void the_allreduce_bench_sums_exactly_on_each_transport_data() {
    QTest::addColumn<QStringList>("transport");
    QTest::addRow("shared memory") << QStringList{"--mca", "btl", "self,vader"};
    QTest::addRow("tcp loopback") << QStringList{"--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"};
  }
  void the_allreduce_bench_sums_exactly_on_each_transport() {
    // The MPI path of bench/allreduce_bench: the link and MPI_Allreduce side by side, every
    // sum checked (no timing is asserted).
    QFETCH(QStringList, transport);
    const QStringList args = QStringList{"--allow-run-as-root", "--mca", "oob_tcp_if_include", "lo", "--oversubscribe",
                                         "-np", "2"} + transport +
                             QStringList{MB_ALLREDUCE_BENCH_PATH, "--iters", "10", "--late-ms", "1", "--diagnose"};
    const Result r = run(mpirun_, args);
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("MPI_Allreduce (Open MPI)") && r.out.contains("mirrorbench MPI link") &&
                 r.out.contains("last rank 1 ms late") && !r.out.contains("WRONG"),
             qPrintable(r.out));
  }

  void two_processes_of_two_threads_are_hierarchical() {
    const auto both = threads_and_processes({"--epochs", "2", "--batch", "64"}, "cpu:4", 2, "cpu:2", "4");
    QVERIFY2(both.failed.isEmpty(), qPrintable(both.failed));
    const mb::RunRecord &t = both.threads, &p = both.processes;
    QCOMPARE(p.config.replicas, 4);
    QCOMPARE(p.config.replicas_per_process, 2);
    QVERIFY(p.replicas_in_sync);
    QCOMPARE(int(p.epochs.back().replica_times.size()), 4);
    // Another order of additions (per-process sums first): the same model to float rounding.
    QVERIFY2(std::fabs(p.epochs.back().val_acc - t.epochs.back().val_acc) <= 1.0 / 200 + 1e-4,
             qPrintable(QString("%1 vs %2").arg(p.epochs.back().val_acc).arg(t.epochs.back().val_acc)));
  }

  void a_killed_process_ends_the_run_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<QString>("says");
    QTest::addRow("kill -9") << int(SIGKILL) << "has died";
    QTest::addRow("SIGSTOP") << int(SIGSTOP) << "is stopped (SIGSTOP)";
  }
  void a_killed_process_ends_the_run() {
    QFETCH(int, signal);
    QFETCH(QString, says);
    const QString json = runs_.path(QString("killed-%1.json").arg(signal));
    QProcess p;
    QElapsedTimer t;
    t.start();
    p.start(mpirun_, mpirun_args(2) + runs_.train({"--devices", "cpu:1", "--epochs", "1000", "--batch", "32", "--timeout",
                                             "3", "--json", json}));
    QVERIFY(p.waitForStarted());
    QByteArray out;
    const QByteArray two_epochs = "epoch 2/1000  time";   // the epoch line, not the progress bar
    while (!out.contains(two_epochs) && t.elapsed() < 120000 && p.state() == QProcess::Running) {
      p.waitForReadyRead(200);
      out += p.readAllStandardOutput();
    }
    QVERIFY2(out.contains(two_epochs), out.constData());
    const auto ranks = ranks_of(static_cast<pid_t>(p.processId()));
    QCOMPARE(int(ranks.size()), 2);
    QElapsedTimer since_kill;
    since_kill.start();
    QCOMPARE(::kill(ranks.at(1), signal), 0);
    const Result r = finish(p, since_kill, 60000);
    const double seconds = since_kill.elapsed() / 1000.0;
    // Bounded: mpirun notices a death at once; a stopped process costs --timeout (3 s).
    QVERIFY2(seconds < 30, qPrintable(QString::number(seconds)));
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.err.contains("MPI rank 1") && r.err.contains(says), qPrintable(r.err));
    // mpirun reaps its ranks as it exits; give the kernel a moment to finish them.
    for (const auto& [rank, pid] : ranks) {
      QElapsedTimer gone;
      gone.start();
      while (alive(pid) && gone.elapsed() < 5000) QThread::msleep(50);
      QVERIFY2(!alive(pid), qPrintable(QString("rank %1 left running").arg(rank)));
    }
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Failed);
    QVERIFY2(QString::fromStdString(rec.error).contains(says), rec.error.c_str());
    QVERIFY(rec.epochs.size() >= 2);
  }

  void sigusr1_to_mpirun_stops_every_process() {
    // How the workbench stops a run it started: mpirun forwards SIGUSR1 to every process,
    // which stop at the same step; process 0 writes a "stopped" record; exit 0.
    const QString json = runs_.path("usr1.json");
    QProcess p;
    QElapsedTimer t;
    t.start();
    p.start(mpirun_, mpirun_args(2) + runs_.train({"--devices", "cpu:1", "--epochs", "1000", "--batch", "32", "--json", json}));
    QVERIFY(p.waitForStarted());
    QByteArray out;
    while (!out.contains("epoch 1/1000  time") && t.elapsed() < 120000 && p.state() == QProcess::Running) {
      p.waitForReadyRead(200);
      out += p.readAllStandardOutput();
    }
    // (A run that already ended has no pid: kill(0, ...) would signal this test's own group.)
    QVERIFY2(p.state() == QProcess::Running && p.processId() > 0, out.constData());
    QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGUSR1), 0);
    const Result r = finish(p, t, 60000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Stopped);
    QVERIFY(!rec.epochs.empty());
  }

  void processes_with_different_data_refuse_to_train() {
    // One process reads another folder (MPMD: two command lines in one mpirun).
    const QString other = runs_.path("other");
    mb::test::write_synthetic_idx_dir(other.toStdString(), 1024, 201);   // a different validation set
    QStringList args = mpirun_args(1) + runs_.train({"--devices", "cpu:1", "--epochs", "1"});
    args << ":" << mpirun_args(1).mid(8) << MB_CLI_PATH << "train" << "--data" << other << "--seed" << "4"
         << "--devices" << "cpu:1" << "--epochs" << "1";
    const Result r = run(mpirun_, args);
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.err.contains("data set of process 1 on host") && r.err.contains("same files"), qPrintable(r.err));
    QVERIFY2(r.seconds < 60, qPrintable(QString::number(r.seconds)));
  }

  void a_launcher_that_mpi_cannot_see_is_named() {
    // srun without --mpi=pmix: every task is an MPI singleton; training alone would be wrong.
    QProcess p;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("SLURM_STEP_NUM_TASKS", "2");
    env.insert("SLURM_PROCID", "0");
    p.setProcessEnvironment(env);
    QElapsedTimer t;
    t.start();
    p.start(MB_CLI_PATH, runs_.train({"--epochs", "1"}).mid(1));
    const Result r = finish(p, t, 60000);
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("srun (Slurm)") && r.err.contains("--mpi=pmix"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(TestMpi)
#include "test_mpi.moc"

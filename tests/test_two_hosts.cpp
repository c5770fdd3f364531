// Runs across two machines, on the two emulated hosts of scripts/two-hosts.sh (network + UTS
// namespaces hostA and hostB joined by a veth pair, one CPU each; made by the CTest fixture
// two_hosts, label "hosts"): `mpirun --hostfile` from inside hostA, over TCP on the pair,
// trains bit for bit what in-process cpu:2 and a one-host `mpirun -np 2` train, and the record
// names both hosts; a rank killed or stopped on hostB ends the run in bounded time naming hostB; a data set
// that differs on hostB is refused naming it; the workbench's scripted run with the hostfile
// runs across them; the all-reduce benchmark sums exactly between them. Skipped, with the
// reason, where the hosts cannot be made (not root, no iproute2) or mpirun is absent.
#include <QtTest>

#include <signal.h>

#include <filesystem>

#include "mpi_runs.h"
#include "records/run_record.h"
#include "test_support.h"

namespace fs = std::filesystem;
using mb::test::Result;

namespace {

constexpr int kRunTimeoutMs = 300000;

QString hosts_dir() { return QStringLiteral(MB_HOSTS_DIR); }

// This environment plus what mpirun needs for the hosts (the fixture's mpi.env).
QProcessEnvironment host_env() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  QFile f(hosts_dir() + "/mpi.env");
  if (f.open(QIODevice::ReadOnly))
    for (const QString& line : QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts)) {
      const auto eq = line.indexOf('=');
      if (eq > 0) env.insert(line.left(eq), line.mid(eq + 1));
    }
  env.insert("OMP_NUM_THREADS", "1");
  return env;
}

// `program args` run inside `host` (the fixture's script does what the rsh agent does).
QStringList in_host(const QString& host, const QString& program, const QStringList& args) {
  return QStringList{"run", hosts_dir(), host, program} + args;
}

QStringList across_hosts() {
  return {"--hostfile", hosts_dir() + "/hostfile", "-np", "2", "--bind-to", "none"};
}

}  // namespace

class TestTwoHosts : public QObject {
  Q_OBJECT
  mb::test::TrainScratch runs_;
  QString mpirun_;

  // mpirun ARGS from inside hostA, with the hosts' environment (plus `extra`).
  Result mpirun_in_host_a(const QStringList& args, const QProcessEnvironment& env = host_env()) const {
    return mb::test::run(MB_TWO_HOSTS_SCRIPT, in_host("hostA", mpirun_, args), kRunTimeoutMs, env);
  }

 private slots:
  void initTestCase() {
    QFile reason(hosts_dir() + "/skip-reason");
    if (reason.open(QIODevice::ReadOnly)) QSKIP(qPrintable("two hosts: " + QString::fromUtf8(reason.readAll()).trimmed()));
    if (!QFile::exists(hosts_dir() + "/ready"))
      QSKIP("two hosts are not set up: run through ctest (-L hosts), whose fixture two_hosts makes them");
    mpirun_ = QStandardPaths::findExecutable("mpirun");
    if (mpirun_.isEmpty()) QSKIP("mpirun is not installed (Debian: openmpi-bin)");
    QVERIFY(runs_.make());
  }

  void the_hosts_are_two_machines() {
    const Result r = mpirun_in_host_a(across_hosts() + QStringList{"hostname"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QStringList names = r.out.split('\n', Qt::SkipEmptyParts);
    names.sort();
    QCOMPARE(names, QStringList({"hostA", "hostB"}));
  }

  void two_hosts_train_what_one_host_and_two_threads_train() {
    const QStringList opts{"--epochs", "2", "--batch", "64"};
    const Result threads = mb::test::run(MB_CLI_PATH, runs_.train(opts + QStringList{"--devices", "cpu:2", "--json",
                                                                               runs_.path("t2.json")}).mid(1));
    QVERIFY2(threads.exit_code == 0, qPrintable(threads.err));
    const QStringList one_host{"--allow-run-as-root", "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo",
                               "-np", "2", "--bind-to", "none"};
    const Result local = mb::test::run(mpirun_, one_host + runs_.train(opts + QStringList{"--devices", "cpu:1", "--json",
                                                                                    runs_.path("p1.json")}));
    QVERIFY2(local.exit_code == 0, qPrintable(local.err));
    const Result across = mpirun_in_host_a(across_hosts() + runs_.train(opts + QStringList{"--devices", "cpu:1", "--json",
                                                                                     runs_.path("h2.json")}));
    QVERIFY2(across.exit_code == 0, qPrintable(across.err));
    const mb::RunRecord t = runs_.record("t2.json"), p = runs_.record("p1.json"), h = runs_.record("h2.json");
    QCOMPARE(h.config.processes, 2);
    QCOMPARE(h.config.replicas, 2);
    QCOMPARE(h.config.hosts, std::vector<std::string>({"hostA", "hostB"}));
    QCOMPARE(p.config.hosts.size(), std::size_t(1));
    QVERIFY(h.replicas_in_sync);
    QCOMPARE(h.epochs.size(), std::size_t(2));
    for (std::size_t e = 0; e < 2; ++e) {
      QCOMPARE(QString::fromStdString(h.epochs[e].param_digest), QString::fromStdString(t.epochs[e].param_digest));
      QCOMPARE(QString::fromStdString(h.epochs[e].param_digest), QString::fromStdString(p.epochs[e].param_digest));
    }
  }

  void a_rank_lost_on_the_other_host_is_named_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<QString>("says");
    QTest::addColumn<bool>("record");
    // Over TCP a peer's death closes its sockets, and Open MPI's ob1 aborts the survivors at
    // once (its BTL error handler does nothing else): mpirun's own message names the rank and
    // host; there is no record. A stopped peer keeps its sockets: the link's watchdog names it
    // (a ping across hosts) and process 0 writes the record.
    QTest::addRow("kill -9") << int(SIGKILL) << "process rank 1 with PID" << false;
    QTest::addRow("SIGSTOP") << int(SIGSTOP) << "MPI rank 1 (host hostB" << true;
  }
  void a_rank_lost_on_the_other_host_is_named() {
    QFETCH(int, signal);
    QFETCH(QString, says);
    QFETCH(bool, record);
    const QString json = runs_.path(QString("lost-%1.json").arg(signal));
    const QString marker = QString("MB_TWO_HOSTS_RUN=%1-%2").arg(QCoreApplication::applicationPid()).arg(signal);
    QProcessEnvironment env = host_env();
    env.insert(marker.section('=', 0, 0), marker.section('=', 1));
    QProcess p;
    p.setProcessEnvironment(env);
    QElapsedTimer t;
    t.start();
    p.start(MB_TWO_HOSTS_SCRIPT, in_host("hostA", mpirun_, across_hosts() + runs_.train({"--devices", "cpu:1", "--epochs",
                                                                                   "1000", "--batch", "32", "--timeout",
                                                                                   "3", "--json", json})));
    QVERIFY(p.waitForStarted());
    QByteArray out;
    const QByteArray two_epochs = "epoch 2/1000  time";
    while (!out.contains(two_epochs) && t.elapsed() < 120000 && p.state() == QProcess::Running) {
      p.waitForReadyRead(200);
      out += p.readAllStandardOutput();
    }
    QVERIFY2(out.contains(two_epochs), out.constData());
    const auto ranks = mb::test::ranks_marked(marker.toStdString());
    QCOMPARE(int(ranks.size()), 2);
    QElapsedTimer since;
    since.start();
    QCOMPARE(::kill(ranks.at(1), signal), 0);   // rank 1 is hostB's (the hostfile's order)
    const Result r = mb::test::finish(p, since, 60000);
    const double seconds = since.elapsed() / 1000.0;
    // Bounded: a death is seen at once; a stopped peer costs --timeout (3 s) and a 2 s ping.
    QVERIFY2(seconds < 30, qPrintable(QString::number(seconds)));
    QVERIFY(r.exit_code != 0);
    const QString err = r.err.simplified();
    QVERIFY2(err.contains(says) && err.contains("hostB"), qPrintable(r.err.right(1500)));
    for (const auto& [rank, pid] : ranks) {
      QElapsedTimer gone;
      gone.start();
      while (mb::test::alive(pid) && gone.elapsed() < 5000) QThread::msleep(50);
      QVERIFY2(!mb::test::alive(pid), qPrintable(QString("rank %1 left running").arg(rank)));
    }
    if (!record) return;
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Failed);
    QVERIFY2(QString::fromStdString(rec.error).contains("host hostB"), rec.error.c_str());
  }

  void a_data_set_that_differs_on_one_host_is_refused() {
    // The same path on both hosts, other files on hostB (as two machines' disks can differ):
    // the default data folder, MIRRORBENCH_DATA, set for hostB by the rsh agent.
    const QString other = runs_.path("other");
    mb::test::write_synthetic_idx_dir(other.toStdString(), 1024, 201);
    QProcessEnvironment env = host_env();
    env.insert("MIRRORBENCH_DATA", runs_.data());
    env.insert("TWO_HOSTS_hostB_MIRRORBENCH_DATA", other);
    const Result r = mpirun_in_host_a(across_hosts() + QStringList{MB_CLI_PATH, "train", "--devices", "cpu:1",
                                                                   "--epochs", "1"},
                                      env);
    QVERIFY(r.exit_code != 0);
    QVERIFY2(r.err.contains("data set of process 1 on host hostB") && r.err.contains("same files"), qPrintable(r.err));
    QVERIFY2(r.seconds < 60, qPrintable(QString::number(r.seconds)));
  }

  void the_workbench_runs_across_the_hosts_of_a_hostfile() {
#ifndef MB_GUI_PATH
    QSKIP("the mirrorbench executable is not built");
#else
    QTemporaryDir home;
    QProcessEnvironment env = host_env();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    env.insert("MIRRORBENCH_HOME", home.path());
    const QString csv = home.filePath("runs.csv");
    const Result r = mb::test::run(
        MB_TWO_HOSTS_SCRIPT,
        in_host("hostA", MB_GUI_PATH,
                {"--run", "--processes", "2", "--hostfile", hosts_dir() + "/hostfile", "--devices", "cpu:1", "--epochs",
                 "1", "--data", runs_.data(), "--limit-train", "256", "--limit-val", "128", "--export-csv", csv, "--quit"}),
        kRunTimeoutMs, env);
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(home.path().toStdString()) / "runs"))
      if (e.path().extension() == ".json") files.push_back(e.path());
    QCOMPARE(int(files.size()), 1);
    const mb::RunRecord rec = mb::read_run_json(files.front());
    QCOMPARE(rec.status, mb::RunStatus::Completed);
    QCOMPARE(rec.config.processes, 2);
    QCOMPARE(rec.config.hosts, std::vector<std::string>({"hostA", "hostB"}));
    QVERIFY(QFile::exists(csv));
#endif
  }

  void the_allreduce_bench_sums_exactly_between_the_hosts() {
    const Result r = mpirun_in_host_a(across_hosts() + QStringList{MB_ALLREDUCE_BENCH_PATH, "--iters", "20",
                                                                   "--late-ms", "2"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("on hostA, hostB") && r.out.contains("MPI_Allreduce (Open MPI)") &&
                 r.out.contains("mirrorbench MPI link") && !r.out.contains("WRONG"),
             qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TestTwoHosts)
#include "test_two_hosts.moc"

// Runs under a real Slurm: the one-node cluster of scripts/one-node-slurm.sh (Debian's
// slurm-wlm and munge, started by the CTest fixture slurm and stopped by pid after these
// tests; label "slurm"). `srun -n 2 --mpi=pmix mirrorbench-cli train` trains in sync what
// `mpirun -np 2` and in-process cpu:2 train (same parameter digests); `srun -n 2` without
// --mpi=pmix is recognised before MPI_Init and ends with exit 2 and a message naming
// --mpi=pmix; `srun -n 1` without it trains alone. Skipped, with the reason, where the
// cluster cannot run (not root, packages missing) or mpirun is absent.
#include <QtTest>

#include "mpi_runs.h"
#include "records/run_record.h"
#include "test_support.h"

using mb::test::Result;

namespace {

constexpr int kRunTimeoutMs = 300000;

QString slurm_dir() { return QStringLiteral(MB_SLURM_DIR); }

// `srun args` on the test cluster's node.
Result srun(const QStringList& args) {
  return mb::test::run(MB_SLURM_SCRIPT, QStringList{"run", slurm_dir(), "srun"} + args, kRunTimeoutMs);
}

}  // namespace

class TestSlurm : public QObject {
  Q_OBJECT
  mb::test::TrainScratch runs_;

  QStringList train(const QStringList& more) const { return runs_.train(QStringList{"--epochs", "2", "--batch", "64"} + more); }

 private slots:
  void initTestCase() {
    QFile reason(slurm_dir() + "/skip-reason");
    if (reason.open(QIODevice::ReadOnly)) QSKIP(qPrintable("Slurm: " + QString::fromUtf8(reason.readAll()).trimmed()));
    if (!QFile::exists(slurm_dir() + "/ready"))
      QSKIP("the test Slurm is not running: run through ctest (-L slurm), whose fixture slurm starts it");
    QVERIFY(runs_.make());
  }

  void srun_with_pmix_trains_what_mpirun_trains() {
    const Result s = srun(QStringList{"-n", "2", "--mpi=pmix"} + train({"--devices", "cpu:1", "--json",
                                                                         runs_.path("srun.json")}));
    QVERIFY2(s.exit_code == 0, qPrintable(s.out + s.err));
    const QString mpirun = QStandardPaths::findExecutable("mpirun");
    if (mpirun.isEmpty()) QSKIP("mpirun is not installed (Debian: openmpi-bin): nothing to compare srun with");
    const Result m = mb::test::run(mpirun, QStringList{"--allow-run-as-root", "--mca", "btl", "self,vader", "--mca",
                                                       "oob_tcp_if_include", "lo", "-np", "2", "--bind-to", "none"} +
                                               train({"--devices", "cpu:1", "--json", runs_.path("mpirun.json")}));
    QVERIFY2(m.exit_code == 0, qPrintable(m.err));
    const mb::RunRecord a = runs_.record("srun.json"), b = runs_.record("mpirun.json");
    QCOMPARE(a.config.processes, 2);
    QCOMPARE(a.config.hosts, std::vector<std::string>({"slurmnode"}));
    QVERIFY(a.replicas_in_sync);
    QCOMPARE(a.epochs.size(), b.epochs.size());
    for (std::size_t e = 0; e < a.epochs.size(); ++e)
      QCOMPARE(QString::fromStdString(a.epochs[e].param_digest), QString::fromStdString(b.epochs[e].param_digest));
    // Only process 0 printed.
    QCOMPARE(s.out.count("mean epoch time"), 1);
  }

  void srun_without_pmix_is_named_before_mpi_starts() {
    const Result r = srun(QStringList{"-n", "2"} + train({"--devices", "cpu:1"}));
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("--mpi=pmix") && r.err.contains("srun (Slurm)"), qPrintable(r.err));
    // Told before MPI_Init: none of Open MPI's own abort.
    QVERIFY2(!r.err.contains("MPI_Init") && !r.err.contains("PMI support"), qPrintable(r.err));
  }

  void one_task_without_pmix_trains_alone() {
    const Result r = srun(QStringList{"-n", "1"} + train({"--devices", "cpu:1", "--json", runs_.path("one.json")}));
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(runs_.record("one.json").config.processes, 1);
  }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "test_slurm.moc"

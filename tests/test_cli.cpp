// mirrorbench-cli as a user meets it: runs the real binary. Bad input gives one clear line
// on stderr and a non-zero exit, and never touches files already stored; a good run writes
// a JSON record, a CSV and a loadable checkpoint.
#include <QtTest>

#include <signal.h>

#include <nlohmann/json.hpp>

#include "model/cnn_spec.h"
#include "records/checkpoint.h"
#include "records/run_record.h"
#include "test_support.h"

namespace {

struct Result {
  int exit_code;
  QString out, err;
};

Result run_cli(const QStringList& args) {
  QProcess p;
  p.start(MB_CLI_PATH, args);
  p.waitForFinished(300000);
  return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString data_dir_;

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    data_dir_ = tmp_.filePath("data");
    mb::test::write_synthetic_idx_dir(data_dir_.toStdString(), 300, 60);
  }

  void version_lists_components() {
    Result r = run_cli({"--version"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("mirrorbench") && r.out.contains("oneDNN"), qPrintable(r.out));
  }

  void devices_lists_cpu() {
    Result r = run_cli({"devices"});
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("cpu:1"), qPrintable(r.out));
  }

  void bad_arguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("unknown flag") << QStringList{"train", "--bogus"} << "--bogus";
    QTest::addRow("unknown command") << QStringList{"fly"} << "fly";
    QTest::addRow("missing value") << QStringList{"train", "--epochs"} << "--epochs";
    QTest::addRow("not a number") << QStringList{"train", "--batch", "12x"} << "12x";
    QTest::addRow("zero epochs") << QStringList{"train", "--epochs", "0"} << "epochs";
    QTest::addRow("unknown device") << QStringList{"train", "--devices", "tpu:0"} << "tpu:0";
    QTest::addRow("batch < replicas") << QStringList{"train", "--devices", "cpu:4", "--batch", "2"} << "replicas";
    QTest::addRow("bad backend") << QStringList{"train", "--backend", "magic"} << "magic";
    QTest::addRow("bad device before data") << QStringList{"train", "--data", "/nonexistent", "--devices", "tpu:0"}
                                            << "tpu:0";
    QTest::addRow("unwritable output") << QStringList{"train", "--csv", "/proc/no/such.csv"} << "/proc/no/such.csv";
    QTest::addRow("output under a file") << QStringList{"train", "--csv", MB_CLI_PATH "/x.csv"} << "not a folder";
    QTest::addRow("output is a folder") << QStringList{"train", "--save", "/tmp"} << "is a folder";
    QTest::addRow("missing data") << QStringList{"train", "--data", "/nonexistent/mnist"} << "/nonexistent/mnist";
  }
  void bad_arguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    // A record already stored at the --json path must survive a failed start.
    const QString json = tmp_.filePath("kept.json");
    {
      QFile f(json);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("precious");
    }
    Result r = run_cli(args + QStringList{"--json", json});
    QVERIFY2(r.exit_code != 0, qPrintable(r.out));
    QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
    QCOMPARE(r.err.trimmed().count('\n'), 0);  // one line
    QFile f(json);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("precious"));
  }

  void corrupt_data_file_is_named() {
    const QString dir = tmp_.filePath("corrupt");
    mb::test::write_synthetic_idx_dir(dir.toStdString(), 50, 10);
    QFile f(dir + "/train-labels-idx1-ubyte");
    QVERIFY(f.open(QIODevice::ReadWrite));
    f.resize(20);  // truncated
    f.close();
    Result r = run_cli({"train", "--data", dir, "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("train-labels-idx1-ubyte"), qPrintable(r.err));
  }

  void ctrl_c_stops_and_keeps_the_record() {
    const QString json = tmp_.filePath("interrupted.json");
    QProcess p;
    p.start(MB_CLI_PATH, {"train", "--data", data_dir_, "--devices", "cpu:2", "--batch", "8", "--epochs", "1000",
                          "--backend", "reference", "--json", json});
    QVERIFY(p.waitForStarted());
    // Wait for the first finished epoch, then interrupt as a user would.
    QByteArray out;
    auto seen_epoch = [&] { return out.append(p.readAllStandardOutput()).contains("epoch 1/1000"); };
    QTRY_VERIFY_WITH_TIMEOUT(seen_epoch(), 60000);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Stopped);
    QVERIFY(!rec.epochs.empty() && rec.epochs.size() < 1000);
  }

  void train_writes_record_csv_and_checkpoint() {
    const QString json = tmp_.filePath("run.json"), csv = tmp_.filePath("run.csv"),
                  ckpt = tmp_.filePath("w.safetensors");
    Result r = run_cli({"train", "--data", data_dir_, "--devices", "cpu:2", "--batch", "32", "--epochs", "2",
                        "--json", json, "--csv", csv, "--save", ckpt});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out.count("epoch 1/2"), 1);  // plain lines when stdout is not a terminal
    QVERIFY(r.out.contains("epoch 2/2"));

    mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Completed);
    QCOMPARE(rec.epochs.size(), std::size_t(2));
    QCOMPARE(rec.config.replicas, 2);
    QCOMPARE(rec.config.global_batch, int64_t(32));
    QCOMPARE(rec.config.train_size, int64_t(300));
    QVERIFY(rec.replicas_in_sync);

    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(c.readAll()).trimmed().split('\n').size(), 3);  // header + 2 epochs

    std::vector<float> w = mb::load_checkpoint(ckpt.toStdString());
    QCOMPARE(w.size(), mb::cnn::kParamCount);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"

// mirrorbench-cli as a user meets it: runs the real binary. Bad input gives one clear line
// on stderr and a non-zero exit, and never touches files already stored; a good run writes
// a JSON record, a CSV and a loadable checkpoint that carry the same run id; SIGINT, SIGTERM
// and SIGHUP stop a run with its outputs written (unless they were ignored at start); one
// output that cannot be written costs only itself.
#include <QtTest>

#include <signal.h>
#include <sys/resource.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include <map>

#include "model/cnn_spec.h"
#include "model/model_text.h"
#include "records/checkpoint.h"
#include "records/run_record.h"
#include "test_support.h"
#include "trainer/progress_events.h"

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

// A checkpoint's __metadata__ (the safetensors header's string map).
std::map<std::string, std::string> checkpoint_metadata(const QString& file) {
  const std::string bytes = mb::test::read_bytes(file.toStdString());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes.at(std::size_t(i)));
  return nlohmann::json::parse(bytes.substr(8, n)).at("__metadata__").get<std::map<std::string, std::string>>();
}

// The run_id column of every data row of a CSV export.
QStringList csv_run_ids(const QString& file) {
  const QStringList lines = QString::fromStdString(mb::test::read_bytes(file.toStdString())).trimmed().split('\n');
  QStringList ids;
  for (qsizetype i = 1; i < lines.size(); ++i) ids << lines[i].section(',', 0, 0);
  return ids;
}

// A long training run (1000 epochs of a tiny set, each a few steps) to be stopped by a signal.
QStringList long_run(const QString& data_dir) {
  return {"train", "--data", data_dir, "--devices", "cpu:2", "--batch", "8", "--epochs", "1000"};
}

// Reads the child's output until it contains `text`, for up to a minute.
bool wait_for_output(QProcess& p, QByteArray& out, const QByteArray& text) {
  QElapsedTimer t;
  t.start();
  while (!out.contains(text) && t.elapsed() < 60000) {
    p.waitForReadyRead(200);
    out += p.readAllStandardOutput();
    if (p.state() == QProcess::NotRunning) break;
  }
  return out.contains(text);
}

}  // namespace

class TestCli : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString data_dir_;
  QString small_dir_;   // 48 images: epochs of a few steps, for runs stopped by a signal

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    data_dir_ = tmp_.filePath("data");
    mb::test::write_synthetic_idx_dir(data_dir_.toStdString(), 300, 60);
    small_dir_ = tmp_.filePath("small");
    mb::test::write_synthetic_idx_dir(small_dir_.toStdString(), 48, 16);
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
    // Numbers out of range say so, with the range.
    QTest::addRow("epochs past int") << QStringList{"train", "--epochs", "2147483648"}
                                     << "--epochs: 2147483648 is out of range (must be in 1..100000)";
    QTest::addRow("epochs past the range") << QStringList{"train", "--epochs", "100001"} << "in 1..100000";
    QTest::addRow("subnormal lr") << QStringList{"train", "--lr", "1e-320"} << "--lr: 1e-320 is out of range";
    QTest::addRow("huge lr") << QStringList{"train", "--lr", "1e7"} << "(0, 1e6]";
    QTest::addRow("zero lr") << QStringList{"train", "--lr", "0"} << "--lr: 0 is out of range";
    QTest::addRow("lr not a number") << QStringList{"train", "--lr", "fast"} << "expects a number";
    QTest::addRow("cpu count past int") << QStringList{"train", "--devices", "cpu:99999999999"}
                                        << "replica count is out of range (1..1024)";
    QTest::addRow("batch past the range") << QStringList{"train", "--batch", "65537"} << "--batch: 65537 is out of range";
    QTest::addRow("hex batch") << QStringList{"train", "--batch", "0x40"} << "expects an integer";
    QTest::addRow("negative seed") << QStringList{"train", "--seed", "-1"} << "--seed: -1 is out of range";
    QTest::addRow("seed past uint64") << QStringList{"train", "--seed", "18446744073709551616"} << "--seed";
    QTest::addRow("negative limit") << QStringList{"train", "--limit-train", "-5"} << "must be >= 0";
    QTest::addRow("option of another command") << QStringList{"devices", "--epochs", "3"} << "for 'devices'";
    QTest::addRow("stray argument") << QStringList{"train", "extra"} << "unexpected argument 'extra'";
    QTest::addRow("unknown top-level option") << QStringList{"--bogus"} << "--bogus";
    QTest::addRow("next option as a value") << QStringList{"train", "--csv", "--epochs", "3"}
                                            << "--csv: needs a value, not the option '--epochs'";
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

  void help_per_subcommand_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("mentions");
    QTest::addRow("top") << QStringList{"--help"} << "train";
    QTest::addRow("help command") << QStringList{"help"} << "selftest";
    QTest::addRow("train") << QStringList{"train", "--help"} << "--epochs E:1..100000";
    QTest::addRow("train -h") << QStringList{"train", "-h"} << "--save FILE";
    QTest::addRow("devices") << QStringList{"devices", "--help"} << "list the devices";
    QTest::addRow("selftest") << QStringList{"selftest", "--help"} << "against the reference";
    QTest::addRow("version command") << QStringList{"version"} << "components:";
  }
  void help_per_subcommand() {
    QFETCH(QStringList, args);
    QFETCH(QString, mentions);
    const Result r = run_cli(args);
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains(mentions), qPrintable(r.out));
    QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
  }

  void no_command_shows_the_usage() {
    const Result r = run_cli({});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.out.contains("Subcommands:") && r.out.contains("train"), qPrintable(r.out));
  }

  void out_of_memory_while_loading_names_the_file() {
#if defined(__SANITIZE_ADDRESS__) || (defined(__has_feature) && __has_feature(address_sanitizer))
    QSKIP("under AddressSanitizer a failed allocation aborts instead of throwing std::bad_alloc");
#endif
    // A valid set of 1M training images (784 MB in sparse files: no disk used) under a 512 MB
    // address-space limit: the allocation fails, and the error names the file (exit 2, data).
    const QString dir = tmp_.filePath("huge");
    QVERIFY(QDir().mkpath(dir));
    auto sparse = [&](const char* name, std::string header, uint64_t data_bytes) {
      const std::filesystem::path f = (dir + "/" + name).toStdString();
      mb::test::write_bytes(f, header);
      std::filesystem::resize_file(f, header.size() + data_bytes);
    };
    auto be32 = [](std::initializer_list<uint32_t> values) {
      std::string out;
      for (uint32_t v : values)
        for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
      return out;
    };
    sparse("train-images-idx3-ubyte", be32({0x803, 1'000'000, 28, 28}), 784'000'000);
    sparse("train-labels-idx1-ubyte", be32({0x801, 1'000'000}), 1'000'000);
    sparse("t10k-images-idx3-ubyte", be32({0x803, 10, 28, 28}), 7840);
    sparse("t10k-labels-idx1-ubyte", be32({0x801, 10}), 10);
    QProcess p;
    p.setChildProcessModifier([] {
      // RLIMIT_DATA, not RLIMIT_AS: it caps the heap and anonymous mappings, not the address
      // space that mapping the CUDA and MPI libraries takes before main.
      const rlimit cap{rlim_t(512) << 20, rlim_t(512) << 20};
      setrlimit(RLIMIT_DATA, &cap);
    });
    p.start(MB_CLI_PATH, {"train", "--data", dir, "--epochs", "1"});
    QVERIFY(p.waitForFinished(120000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains(dir + "/train-images-idx3-ubyte") && err.contains("out of memory"), qPrintable(err));
    QDir(dir).removeRecursively();
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

  void signal_stops_and_keeps_the_outputs_data() {
    QTest::addColumn<int>("signal");
    QTest::addColumn<QString>("said");
    QTest::addRow("SIGINT (Ctrl-C)") << int(SIGINT) << "stopped by the user";
    QTest::addRow("SIGTERM") << int(SIGTERM) << "stopped by SIGTERM";
    QTest::addRow("SIGHUP") << int(SIGHUP) << "stopped by SIGHUP";
    QTest::addRow("SIGUSR1 (mpirun forwards it)") << int(SIGUSR1) << "stopped by SIGUSR1";
  }
  void signal_stops_and_keeps_the_outputs() {
    QFETCH(int, signal);
    QFETCH(QString, said);
    const QString tag = QString::number(signal);
    const QString json = tmp_.filePath("stopped" + tag + ".json"), ckpt = tmp_.filePath("stopped" + tag + ".safetensors");
    QProcess p;
    p.start(MB_CLI_PATH, long_run(small_dir_) + QStringList{"--json", json, "--save", ckpt});
    QVERIFY(p.waitForStarted());
    // Wait for the first finished epoch, then stop it as a user, a scheduler or a closed terminal would.
    QByteArray out;
    QVERIFY2(wait_for_output(p, out, "epoch 1/1000"), out.constData());
    ::kill(static_cast<pid_t>(p.processId()), signal);
    QVERIFY(p.waitForFinished(60000));
    out += p.readAllStandardOutput();
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 0);
    QVERIFY2(out.contains(said.toUtf8()), out.constData());
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Stopped);
    QVERIFY(!rec.epochs.empty() && rec.epochs.size() < 1000);
    QCOMPARE(mb::load_checkpoint(ckpt.toStdString()).params.size(), mb::cnn::kReferenceParams);
    QCOMPARE(checkpoint_metadata(ckpt).at("status"), std::string("stopped"));
  }

  void ignored_sigterm_stays_ignored() {
    // As nohup does for SIGHUP: a signal ignored at start must not become a stop request.
    // The shell ignores SIGTERM and execs the CLI, which inherits that.
    const QString json = tmp_.filePath("nohup.json");
    QStringList cmd{MB_CLI_PATH};
    cmd << long_run(small_dir_) << "--json" << json;
    QProcess p;
    p.start("/bin/sh", QStringList{"-c", "trap '' TERM; exec \"$@\"", "sh"} + cmd);
    QVERIFY(p.waitForStarted());
    QByteArray out;
    QVERIFY2(wait_for_output(p, out, "epoch 1/1000"), out.constData());
    ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
    // Still training two epochs later; then Ctrl-C stops it as usual.
    QVERIFY2(wait_for_output(p, out, "epoch 3/1000"), out.constData());
    QCOMPARE(p.state(), QProcess::Running);
    ::kill(static_cast<pid_t>(p.processId()), SIGINT);
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Stopped);
    QVERIFY(rec.epochs.size() >= 3 && rec.epochs.size() < 1000);
  }

  void one_failed_output_loses_nothing_else() {
    // --json's folder becomes a file during the run (after the start-up check passed), so
    // only that write fails; the checkpoint and the CSV must still be written, the failure
    // reported on its own line, and the exit code non-zero.
    const QString dir = tmp_.filePath("vanishing");
    QVERIFY(QDir().mkpath(dir));
    const QString json = dir + "/run.json", csv = tmp_.filePath("kept.csv"), ckpt = tmp_.filePath("kept.safetensors");
    QProcess p;
    p.start(MB_CLI_PATH, long_run(small_dir_) + QStringList{"--json", json, "--csv", csv, "--save", ckpt});
    QVERIFY(p.waitForStarted());
    QByteArray out;
    QVERIFY2(wait_for_output(p, out, "epoch 1/1000"), out.constData());
    QVERIFY(QDir(dir).removeRecursively());
    mb::test::write_bytes(dir.toStdString(), "now a file");
    ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
    QVERIFY(p.waitForFinished(60000));
    out += p.readAllStandardOutput();
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(err.contains("--json " + json + " was not written"), qPrintable(err));
    QCOMPARE(err.trimmed().count('\n'), 0);   // that one line only
    QVERIFY(!QFileInfo(json).exists());
    // The others, with one run id between them.
    const std::string id = checkpoint_metadata(ckpt).at("run_id");
    QVERIFY(!id.empty());
    QCOMPARE(mb::load_checkpoint(ckpt.toStdString()).params.size(), mb::cnn::kReferenceParams);
    const QStringList ids = csv_run_ids(csv);
    QVERIFY(!ids.isEmpty());
    for (const QString& row_id : ids) QCOMPARE(row_id.toStdString(), id);
    QVERIFY2(out.contains(QByteArray("run ") + id.c_str() + ": wrote"), out.constData());
  }

  // --onednn-isa caps oneDNN's kernels as ONEDNN_MAX_CPU_ISA does (the same bits: what the
  // golden digests keyed "oneDNN avx2" hold), the record names what ran, and a name oneDNN does
  // not know is refused with exit 2.
  void onednn_isa_does_what_the_variable_did() {
    const QString with_option = tmp_.filePath("isa-option.json"), with_variable = tmp_.filePath("isa-variable.json");
    const QStringList args{"train", "--data", data_dir_, "--devices", "cpu:2", "--epochs", "1"};
    const Result r = run_cli(args + QStringList{"--onednn-isa", "avx2", "--json", with_option});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("ONEDNN_MAX_CPU_ISA", "AVX2");
    p.setProcessEnvironment(env);
    p.start(MB_CLI_PATH, args + QStringList{"--json", with_variable});
    QVERIFY(p.waitForFinished(300000) && p.exitCode() == 0);
    const auto a = nlohmann::json::parse(mb::test::read_bytes(with_option.toStdString()));
    const auto b = nlohmann::json::parse(mb::test::read_bytes(with_variable.toStdString()));
    QCOMPARE(a.at("epochs").back().at("param_digest"), b.at("epochs").back().at("param_digest"));
    QVERIFY(a.at("config").at("kernels").get<std::string>().find("oneDNN avx2") != std::string::npos);
    QCOMPARE(a.at("config").at("kernels"), b.at("config").at("kernels"));
    QCOMPARE(a.at("config").at("engine_options").at("onednn_isa").get<std::string>(), std::string("avx2"));
    QCOMPARE(b.at("config").at("engine_options").at("onednn_isa").get<std::string>(), std::string("auto"));
    const Result bad = run_cli(args + QStringList{"--onednn-isa", "avx9"});
    QCOMPARE(bad.exit_code, 2);
    QVERIFY2(bad.err.contains("--onednn-isa avx9"), qPrintable(bad.err));
  }

  void sweep_reports_every_configuration() {
    const QString history = tmp_.filePath("sweep-history"), json = tmp_.filePath("sweep.json");
    Result r = run_cli({"sweep", "--data", data_dir_, "--batches", "32,64", "--epochs", "2", "--target", "0.3",
                        "--history", history, "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("<- best") && r.out.contains("time to 30 %"), qPrintable(r.out));
    const nlohmann::json j = nlohmann::json::parse(mb::test::read_bytes(json.toStdString()));
    QCOMPARE(j.at("configurations").size(), std::size_t(4));   // 32, 64, then both scaled
    for (const auto& c : j.at("configurations"))
      for (const char* key : {"global_batch", "scale_lr", "epoch_s", "val_acc", "time_to_target_s"}) QVERIFY(c.contains(key));
    // Every configuration's run is in the history, where compare and the workbench find it.
    // Every run in the history, each with its Chrome trace beside it (as the workbench keeps them).
    QCOMPARE(QDir(history + "/runs").entryList({"*.trace.json"}, QDir::Files).size(), 4);
    QCOMPARE(QDir(history + "/runs").entryList({"*.json"}, QDir::Files).size(), 8);
    QVERIFY(run_cli({"sweep", "--batches", "64,64"}).err.contains("listed twice"));
  }

  void reference_and_compare_give_the_verdict() {
    // The classic task on the small synthetic set: one replica, then two, judged; then the
    // stored two-replica run compared again, from the history, with the same verdict.
    const QString history = tmp_.filePath("ref-history"), json = tmp_.filePath("ref.json");
    Result r = run_cli({"reference", "--data", data_dir_, "--devices", "cpu:2", "--history", history, "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("time per epoch reduced by >= 40 %:") && r.out.contains("validation accuracy above 80 %:"),
             qPrintable(r.out));
    const QString verdict = r.out.mid(r.out.lastIndexOf("time per epoch reduced"));
    const mb::RunRecord run = mb::read_run_json(json.toStdString());
    QCOMPARE(run.config.epochs, 5);
    Result c = run_cli({"compare", json, "--history", history});
    QVERIFY2(c.exit_code == 0, qPrintable(c.err));
    QVERIFY2(c.out.contains(QString::fromStdString(run.id)), qPrintable(c.out));
    QCOMPARE(c.out.mid(c.out.lastIndexOf("time per epoch reduced")), verdict);
    // By id too.
    QCOMPARE(run_cli({"compare", QString::fromStdString(run.id), "--history", history}).out, c.out);
    QCOMPARE(run_cli({"compare", "no-such-run", "--history", history}).exit_code, 2);
    QVERIFY(run_cli({"reference", "--devices", "cpu:1"}).err.contains("baseline's own device"));
  }

  void scaling_predicts_in_json() {
    const QString json = tmp_.filePath("scaling.json");
    // Short rounds of the small mlp: the reference CNN's calibration lasts over three minutes
    // under the sanitizers (its compute runs ~50x slower there), too close to the deadline.
    Result r = run_cli({"scaling", "--model", "mlp", "--max-replicas", "3", "--round-images", "64", "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const nlohmann::json j = nlohmann::json::parse(mb::test::read_bytes(json.toStdString()));
    QVERIFY(j.at("calibration").contains("allreduce"));
    QCOMPARE(j.at("predictions").size(), std::size_t(6));   // 1..3, global and per-replica
    for (const auto& p : j.at("predictions"))
      for (const char* key : {"replicas", "mode", "epoch_s", "speedup", "efficiency", "comm_share"}) QVERIFY(p.contains(key));
    QVERIFY(run_cli({"scaling", "--devices", "cuda:0"}).err.contains("CPU replicas"));
    // The same calibration again, for two machines of one replica each over a slow link.
    const QString two = tmp_.filePath("scaling-two.json");
    r = run_cli({"scaling", "--model", "mlp", "--calibration", json, "--max-replicas", "2", "--machines", "2",
                 "--link-gbps", "1", "--link-latency-us", "50", "--json", two});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(!r.out.contains("calibrating"), qPrintable(r.out));
    const nlohmann::json t = nlohmann::json::parse(mb::test::read_bytes(two.toStdString()));
    QCOMPARE(t.at("predictions").at(1).at("machines").get<int>(), 2);
    QVERIFY(t.at("predictions").at(1).at("note").get<std::string>().find("1 Gbit/s link, 50 us") != std::string::npos);
    r = run_cli({"scaling", "--model", "mlp", "--calibration", json, "--machines", "2"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("--link-gbps"), qPrintable(r.err));
    QCOMPARE(run_cli({"scaling", "--calibration", tmp_.filePath("none.json")}).exit_code, 2);
  }

  void json_progress_is_a_stream_of_events() {
    // What the workbench reads from a run it started as a child process (mpirun ...): every
    // stdout line an event, in order, the last one the whole record, as written to --json.
    const QString json = tmp_.filePath("streamed.json");
    Result r = run_cli({"train", "--data", data_dir_, "--devices", "cpu:2", "--batch", "32", "--epochs", "2",
                        "--progress", "json", "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    std::vector<mb::ProgressEvent> events;
    for (const QString& line : r.out.split('\n', Qt::SkipEmptyParts)) {
      auto e = mb::parse_progress_line(line.toStdString());
      QVERIFY2(e.has_value(), qPrintable("not an event: " + line));
      events.push_back(*e);
    }
    using Kind = mb::ProgressEvent::Kind;
    QVERIFY(events.size() >= 5);
    QVERIFY(events.front().kind == Kind::Log);   // the trainer's first line, then start
    int starts = 0, epochs = 0, steps = 0;
    for (const auto& e : events) {
      starts += e.kind == Kind::Start;
      epochs += e.kind == Kind::Epoch;
      steps += e.kind == Kind::Step;
    }
    QCOMPARE(starts, 1);
    QCOMPARE(epochs, 2);
    QVERIFY(steps >= 2);
    QVERIFY(events.back().kind == Kind::End);
    const mb::RunRecord& streamed = events.back().record;
    const mb::RunRecord stored = mb::read_run_json(json.toStdString());
    QCOMPARE(streamed.id, stored.id);
    QCOMPARE(streamed.epochs.size(), std::size_t(2));
    QCOMPARE(streamed.epochs[1].val_acc, stored.epochs[1].val_acc);
    QVERIFY(r.err.contains("wrote"));   // the human lines went to stderr
    QVERIFY_THROWS_EXCEPTION(mb::DataError, mb::parse_progress_line(R"({"event":"epoch","metrics":1})"));
    QVERIFY(!mb::parse_progress_line("mpirun: some launcher message").has_value());
  }

  // ---- the model as data -------------------------------------------------------------------

  void model_prints_every_preset_data() {
    QTest::addColumn<QString>("spec");
    for (const auto& p : mb::model_presets()) QTest::newRow(std::string(p.name).c_str()) << QString::fromUtf8(p.name.data(), qsizetype(p.name.size()));
    QTest::newRow("colour text") << "16x16x3:conv8@5s-avgpool@s-conv4@1_nobias-gap-drop12.5-dense7";
  }
  // The table as Keras's model.summary() prints it, and the same numbers as JSON.
  void model_prints_every_preset() {
    QFETCH(QString, spec);
    const mb::ModelSpec m = mb::model_from_text(spec.toStdString());
    const mb::ModelShape& shape = m.shape();
    Result r = run_cli({"model", spec, "--batch", "64"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QString grouped = QLocale(QLocale::English).toString(qlonglong(m.param_count()));
    QVERIFY2(r.out.contains("Total params: " + grouped), qPrintable(r.out));
    QVERIFY2(r.out.contains(QString::fromStdString("Text: " + mb::model_text(m))), qPrintable(r.out));
    QVERIFY2(r.out.contains("at batch 64"), qPrintable(r.out));
    for (const auto& l : shape.layers) QVERIFY2(r.out.contains(QString::fromStdString(l.name)), qPrintable(r.out));

    Result j = run_cli({"model", spec, "--batch", "64", "--json"});
    QVERIFY2(j.exit_code == 0, qPrintable(j.err));
    const auto doc = nlohmann::json::parse(j.out.toStdString());
    QCOMPARE(doc.at("text").get<std::string>(), mb::model_text(m));
    QCOMPARE(doc.at("total_params").get<int64_t>(), int64_t(m.param_count()));
    QCOMPARE(doc.at("classes").get<int>(), m.classes());
    QCOMPARE(doc.at("input_shape"), nlohmann::json({m.input().h, m.input().w, m.input().c}));
    QCOMPARE(doc.at("layers").size(), shape.layers.size());
    QCOMPARE(doc.at("allreduce_bytes").get<double>(), double(m.gradient_bytes()));
    QCOMPARE(doc.at("memory_bytes_per_replica").get<double>(), double(m.shape().memory_bytes(64)));
    // Every tensor once, in the order and at the offsets the checkpoints use.
    std::vector<std::string> names;
    int64_t sum = 0;
    for (const auto& l : doc.at("layers")) {
      sum += l.at("params").get<int64_t>();
      for (const auto& t : l.at("tensors")) names.push_back(t.at("name").get<std::string>());
    }
    QCOMPARE(sum, int64_t(m.param_count()));
    QCOMPARE(names.size(), shape.params.size());
    for (std::size_t i = 0; i < names.size(); ++i) QCOMPARE(names[i], shape.params[i].name);
    // The text reads back to the same model.
    QVERIFY(mb::model_from_text(doc.at("text").get<std::string>()) == m);
  }

  void model_refuses_an_invalid_spec_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("mentions");
    QTest::newRow("even kernel") << "conv32-pool-conv64@4-dense10" << "layer 3 ('conv64@4')";
    QTest::newRow("pool too small") << "pool-pool-pool-pool-pool-dense10" << "layer 5 ('pool')";
    QTest::newRow("conv after dense") << "conv8-dense10-conv3" << "flattened";
    QTest::newRow("unknown word") << "conv8-lstm16-dense10" << "'lstm16'";
    QTest::newRow("no logits") << "conv8-pool" << "Dense";
    QTest::newRow("unknown preset") << "resnet50" << "resnet50";
  }
  void model_refuses_an_invalid_spec() {
    QFETCH(QString, spec);
    QFETCH(QString, mentions);
    for (const QStringList& args : {QStringList{"model", spec}, QStringList{"train", "--model", spec}}) {
      const Result r = run_cli(args);
      QCOMPARE(r.exit_code, 2);
      QVERIFY2(r.err.contains(mentions), qPrintable(r.err));
      QCOMPARE(r.err.trimmed().count('\n'), 0);
    }
  }

  // A colour model with dropout on synthetic data of its shape, on two replicas: the record,
  // the checkpoint and its tensor names follow the model, and the data says it is synthetic.
  void trains_a_colour_model_on_synthetic_images() {
    const QString spec = "16x16x3:conv8@3s-pool-drop25-conv8@5_nobias-gap-dense5";
    const QString json = tmp_.filePath("colour.json"), ckpt = tmp_.filePath("colour.safetensors");
    Result r = run_cli({"train", "--model", spec, "--data", "synthetic:16x16x3:5", "--limit-train", "256",
                        "--limit-val", "64", "--devices", "cpu:2", "--batch", "32", "--epochs", "2", "--json", json,
                        "--save", ckpt});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const mb::ModelSpec m = mb::model_from_text(spec.toStdString());
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Completed);
    QVERIFY(rec.config.model == m);
    QCOMPARE(rec.config.dataset, std::string("synthetic-16x16x3-5"));
    QVERIFY(rec.replicas_in_sync);
    QCOMPARE(rec.epochs.size(), std::size_t(2));
    const mb::Checkpoint c = mb::load_checkpoint(ckpt.toStdString());
    QVERIFY(c.model == m);
    QCOMPARE(c.params.size(), m.param_count());
    QCOMPARE(checkpoint_metadata(ckpt).at("model"), mb::model_text(m));
  }

  // A Keras file as --model: `model FILE` says what it read, and the model trains in sync on two
  // replicas; a refused layer exits 2 naming it.
  void trains_a_keras_file_in_sync() {
    const QString file = tmp_.filePath("keras_model.json");
    const nlohmann::json layer = {{"class_name", "Conv2D"},
                                  {"config", {{"name", "conv2d"}, {"filters", 8}, {"kernel_size", {3, 3}},
                                              {"padding", "same"}, {"activation", "relu"},
                                              {"batch_input_shape", {nullptr, 16, 16, 3}}}}};
    nlohmann::json model = {{"class_name", "Sequential"},
                            {"config", {{"name", "tiny"},
                                        {"layers", {layer,
                                                    {{"class_name", "MaxPooling2D"}, {"config", {{"name", "pool"}}}},
                                                    {{"class_name", "Flatten"}, {"config", {{"name", "flatten"}}}},
                                                    {{"class_name", "Dense"},
                                                     {"config", {{"name", "out"}, {"units", 5}, {"activation", "softmax"}}}}}}}},
                            {"keras_version", "2.15.0"}};
    std::ofstream(file.toStdString()) << model.dump();
    Result r = run_cli({"model", file});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("Keras 2.15.0 JSON") && r.out.contains("16x16x3:conv8@3s-pool-dense5") &&
                 r.out.contains("softmax") && r.out.contains("2,789"),   // 3*3*3*8+8 = 224, 8*8*8*5+5 = 2,565
             qPrintable(r.out));
    const QString json = tmp_.filePath("keras.json");
    r = run_cli({"train", "--model", file, "--data", "synthetic:16x16x3:5", "--limit-train", "256", "--limit-val", "64",
                 "--devices", "cpu:2", "--batch", "32", "--epochs", "1", "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QVERIFY(rec.replicas_in_sync);
    QCOMPARE(mb::model_text(rec.config.model), std::string("16x16x3:conv8@3s-pool-dense5"));

    model["config"]["layers"][1] = {{"class_name", "BatchNormalization"}, {"config", {{"name", "bn"}}}};
    std::ofstream(file.toStdString()) << model.dump();
    r = run_cli({"train", "--model", file, "--data", "synthetic:16x16x3:5", "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("model.layers[1] 'bn' (BatchNormalization)"), qPrintable(r.err));
  }

  void a_model_that_does_not_fit_the_data_names_both_shapes() {
    // cnn-cifar reads 32x32x3; the data set is 28x28x1.
    Result r = run_cli({"train", "--model", "cnn-cifar", "--data", data_dir_, "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("32x32x3") && r.err.contains("28x28x1"), qPrintable(r.err));
    r = run_cli({"train", "--model", "conv8-dense5", "--data", "synthetic:28x28x1:7", "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("7 classes") && r.err.contains("5 outputs"), qPrintable(r.err));
    r = run_cli({"train", "--data", "synthetic:28x28", "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("synthetic:28x28"), qPrintable(r.err));
  }

  // NumPy data as keras.datasets keeps it (issue 28): trains end to end with a model of its
  // shape and class count; a model of another input, or a broken file, exits 2 naming it.
  void numpy_data_trains_and_bad_numpy_data_exits_2() {
    const QString npz = QString(MB_TEST_DATA_DIR) + "/numpy/tiny_rgb.npz", json = tmp_.filePath("npz.json");
    Result r = run_cli({"train", "--data", npz, "--model", "4x3x3:dense8-dense3", "--devices", "cpu:2", "--batch", "4",
                        "--epochs", "1", "--json", json});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    const auto record = nlohmann::json::parse(mb::test::read_bytes(json.toStdString()));
    QCOMPARE(QString::fromStdString(record.at("config").at("dataset").get<std::string>()), QString("tiny_rgb"));
    r = run_cli({"train", "--data", npz, "--epochs", "1"});   // the reference CNN reads 28x28x1
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("4x3x3") && r.err.contains("28x28x1"), qPrintable(r.err));
    const QString broken = tmp_.filePath("broken.npz");
    mb::test::write_bytes(broken.toStdString(), mb::test::read_bytes(npz.toStdString()).substr(0, 300));
    r = run_cli({"train", "--data", broken, "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("broken.npz"), qPrintable(r.err));
  }

  // An image folder in Keras's layout, made of two of test_image_data's JPEG fixtures (12x10
  // colour): the data line says what was read; a truncated file exits 2 naming it.
  void image_folder_trains_and_a_broken_image_exits_2() {
    const std::filesystem::path images = std::filesystem::path(MB_TEST_DATA_DIR) / "images";
    const std::filesystem::path dir = tmp_.filePath("pictures").toStdString();
    for (const auto& [from, to] : {std::pair{"colour.jpg", "train/cat/1.jpg"}, {"colour_444.jpg", "train/dog/1.jpg"},
                                   {"colour.jpg", "test/cat/2.jpg"}, {"colour_444.jpg", "test/dog/2.jpg"}}) {
      std::filesystem::create_directories((dir / to).parent_path());
      std::filesystem::copy_file(images / from, dir / to);
    }
    const QString data = QString::fromStdString(dir.string());
    Result r = run_cli({"train", "--data", data, "--model", "10x12x3:dense8-dense2", "--devices", "cpu:2", "--batch",
                        "2", "--epochs", "1"});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("(PNG/JPEG image folders): 2 + 2 images of 10x12x3, 2 classes, read in"), qPrintable(r.out));
    const std::string jpeg = mb::test::read_bytes((images / "colour.jpg").string());
    mb::test::write_bytes((dir / "test" / "cat" / "2.jpg").string(), jpeg.substr(0, jpeg.size() / 2));
    r = run_cli({"train", "--data", data, "--model", "10x12x3:dense8-dense2", "--epochs", "1"});
    QCOMPARE(r.exit_code, 2);
    QVERIFY2(r.err.contains("2.jpg") && r.err.contains("JPEG"), qPrintable(r.err));
  }

  void train_writes_record_csv_and_checkpoint() {
    const QString json = tmp_.filePath("run.json"), csv = tmp_.filePath("run.csv"),
                  ckpt = tmp_.filePath("w.safetensors");
    // Numbers are decimal whatever their spelling ("010" is ten, not eight) and exact.
    Result r = run_cli({"train", "--data", data_dir_, "--devices", "cpu:2", "--batch", "32", "--epochs", "2",
                        "--seed", "010", "--lr", "0.003", "--json", json, "--csv", csv, "--save", ckpt});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out.count("epoch 1/2"), 1);  // plain lines when stdout is not a terminal
    QVERIFY(r.out.contains("epoch 2/2"));

    mb::RunRecord rec = mb::read_run_json(json.toStdString());
    QCOMPARE(rec.status, mb::RunStatus::Completed);
    QCOMPARE(rec.epochs.size(), std::size_t(2));
    QCOMPARE(rec.config.replicas, 2);
    QCOMPARE(rec.config.global_batch, int64_t(32));
    QCOMPARE(rec.config.train_size, int64_t(300));
    QCOMPARE(rec.config.seed, uint64_t(10));
    QCOMPARE(rec.config.base_learning_rate, 0.003);
    QVERIFY(rec.replicas_in_sync);

    QFile c(csv);
    QVERIFY(c.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(c.readAll()).trimmed().split('\n').size(), 3);  // header + 2 epochs

    std::vector<float> w = mb::load_checkpoint(ckpt.toStdString()).params;
    QCOMPARE(w.size(), mb::cnn::kReferenceParams);

    // One run id in all three outputs, so a set mixed from two runs shows.
    const auto meta = checkpoint_metadata(ckpt);
    QCOMPARE(meta.at("run_id"), rec.id);
    QCOMPARE(meta.at("status"), std::string("completed"));
    QCOMPARE(meta.at("epochs"), std::string("2"));
    QCOMPARE(csv_run_ids(csv), (QStringList{QString::fromStdString(rec.id), QString::fromStdString(rec.id)}));
    QVERIFY2(r.out.contains(QString("run %1: wrote %2, %3, %4").arg(QString::fromStdString(rec.id), ckpt, json, csv)),
             qPrintable(r.out));
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"

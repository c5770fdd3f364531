// Runs across processes from the workbench: the TrainConfig -> `mpirun ... mirrorbench-cli
// train` translation, the run setup's process group and its checks, the child-process trainer
// against small shell scripts standing in for mpirun (a child that dies after starting, one
// that fails before, one that ignores Stop, one that must not get SIGUSR1 before it starts),
// and the real thing: 2-process plans under the real mpirun through the window and in scripted
// mode, on tiny synthetic data (skipped, with the reason, where mpirun is absent).
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <signal.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <set>

#include "app/main_window.h"
#include "backends/registry.h"
#include "charts/chart_panel.h"
#include "data/dataset.h"
#include "history/history_model.h"
#include "records/run_record.h"
#include "run/child_command.h"
#include "run/mpirun_trainer.h"
#include "run/run_controller.h"
#include "setup/run_setup_panel.h"
#include "gui_process.h"
#include "gui_window_fixture.h"
#include "test_support.h"
#include "trainer/progress_events.h"

namespace fs = std::filesystem;
using namespace mb;

namespace {

constexpr int kTrain = 512, kVal = 256;
constexpr int kRunTimeoutMs = 90000;

// The value after `flag` in an argument list, or a null string.
QString value_of(const QStringList& args, const QString& flag) {
  const qsizetype i = args.indexOf(flag);
  return i >= 0 && i + 1 < args.size() ? args[i + 1] : QString();
}

// Whether `seq` occurs in `args` as consecutive arguments.
bool has_sequence(const QStringList& args, const QStringList& seq) {
  for (qsizetype i = 0; i + seq.size() <= args.size(); ++i)
    if (args.mid(i, seq.size()) == seq) return true;
  return false;
}

// Event lines as mirrorbench-cli writes them (the same core code), for the stand-in scripts.
QByteArray start_line() {
  ProgressEvent e;
  e.kind = ProgressEvent::Kind::Start;
  e.config.devices = parse_devices("cpu:1");
  e.config.processes = 2;
  e.config.replicas = 2;
  e.config.epochs = 3;
  e.config.dataset = "synthetic";
  e.config.start_time = "2026-01-01T00:00:00Z";
  return QByteArray::fromStdString(to_json_line(e)) + "\n";
}

QByteArray epoch_line(int epoch) {
  ProgressEvent e;
  e.kind = ProgressEvent::Kind::Epoch;
  e.epoch = EpochMetrics{epoch, 0.5, 0.1, 0.9, 0.7, 0.8, 0.72, 1000, {}, {}};
  return QByteArray::fromStdString(to_json_line(e)) + "\n";
}

QByteArray end_line(RunStatus status) {
  ProgressEvent e;
  e.kind = ProgressEvent::Kind::End;
  e.record.id = "stand-in";
  e.record.config.devices = parse_devices("cpu:1");
  e.record.config.processes = 2;
  e.record.config.replicas = 2;
  e.record.status = status;
  return QByteArray::fromStdString(to_json_line(e)) + "\n";
}

}  // namespace

class TestWorkbenchProcesses : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();

  // The command line.
  void cli_args_carry_every_field_data();
  void cli_args_carry_every_field();
  void cli_args_are_options_of_the_cli();
  void learning_rate_is_written_to_be_read_back_exactly();
  void mpirun_stays_on_this_machine_without_a_hostfile();

  // The run setup.
  void process_group_needs_mpirun();
  void process_choices_are_checked_in_place();
  void gpus_across_processes_are_one_each();
  void process_count_is_remembered();

  // The child-process worker against stand-ins for mpirun.
  void a_child_that_dies_after_starting_gives_a_failed_record();
  void a_child_that_fails_before_starting_is_rejected_data();
  void a_child_that_fails_before_starting_is_rejected();
  void stop_before_the_start_event_waits_for_it();
  void a_child_that_ignores_stop_is_ended_data();
  void a_child_that_ignores_stop_is_ended();
  void shutdown_delivers_the_record_before_returning();
  void a_launcher_that_cannot_start_is_reported();

  // The real mpirun, through the window.
  void two_process_compare_reaches_history_and_card();
  // How a run ends early, the same for a run in this process and one across processes.
  void stop_gives_a_stopped_record_data() { where_it_runs(); }
  void stop_gives_a_stopped_record();
  void closing_mid_run_stops_and_saves_data() { where_it_runs(); }
  void closing_mid_run_stops_and_saves();
  void destroying_mid_run_stops_and_saves_data() { where_it_runs(); }
  void destroying_mid_run_stops_and_saves();
  void child_failure_is_reported();
  void scripted_mode_runs_across_processes();

 private:
  QString script(const QString& name, const QByteArray& body);   // an executable /bin/sh file
  Launcher stand_in(const QString& script_path) const { return Launcher{script_path, "/bin/true", false}; }
  bool real_mpirun_or_skip(QString* why) const;
  void fill(int epochs, int processes);
  static void where_it_runs();
  bool start_long_run(int processes, std::set<fs::path>* records_before);
  RunRecord last_record() const { return fx_.last_record(); }

  test::WindowFixture fx_{kTrain, kVal};
  // Short names for the fixture's parts, as the test bodies use them.
  QTemporaryDir& home_ = fx_.home;
  QTemporaryDir& tmp_ = fx_.scratch;
  const QString& data_dir_ = fx_.data_dir;
  QString events_dir_;
  std::unique_ptr<MainWindow>& window_ = fx_.window;
};

void TestWorkbenchProcesses::initTestCase() {
  const QString failed = fx_.prepare();
  QVERIFY2(failed.isEmpty(), qPrintable(failed));
  // The stand-ins print these files (JSON is awkward to quote in shell).
  events_dir_ = tmp_.filePath("events");
  QVERIFY(QDir().mkpath(events_dir_));
  test::write_bytes((events_dir_ + "/start").toStdString(), start_line().toStdString());
  test::write_bytes((events_dir_ + "/epoch").toStdString(), epoch_line(1).toStdString());
  test::write_bytes((events_dir_ + "/end-stopped").toStdString(), end_line(RunStatus::Stopped).toStdString());
}

void TestWorkbenchProcesses::init() {}

void TestWorkbenchProcesses::cleanup() { fx_.close_window(); }

QString TestWorkbenchProcesses::script(const QString& name, const QByteArray& body) {
  const QString path = tmp_.filePath(name);
  QByteArray text = "#!/bin/sh\nE=" + events_dir_.toUtf8() + "\n" + body + "\n";
  test::write_bytes(path.toStdString(), text.toStdString());
  QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

bool TestWorkbenchProcesses::real_mpirun_or_skip(QString* why) const {
#ifndef MB_CLI_HAS_MPI
  *why = "mirrorbench-cli is built without MPI (-DMB_WITH_MPI=OFF): no runs across processes";
  return false;
#else
  const Launcher l = find_launcher();
  if (l.mpirun.isEmpty()) {
    *why = "mpirun is not installed (Debian: openmpi-bin): workbench runs across processes untested here";
    return false;
  }
  if (!l.available()) {
    *why = l.problem();
    return false;
  }
  return true;
#endif
}

#define REQUIRE_MPIRUN()                              \
  do {                                                \
    QString why_;                                     \
    if (!real_mpirun_or_skip(&why_)) QSKIP(qPrintable(why_)); \
  } while (false)

// The panel as a user fills it: tiny data, one CPU replica per process.
void TestWorkbenchProcesses::fill(int epochs, int processes) {
  QVERIFY(fx_.open_window());
  const QString problems = fx_.fill({.epochs = epochs, .replicas = 1, .batch = 64, .seed = 3, .processes = processes});
  QVERIFY2(problems.isEmpty(), qPrintable(problems));
}

// ---- The command line -------------------------------------------------------------------

void TestWorkbenchProcesses::cli_args_carry_every_field_data() {
  QTest::addColumn<TrainConfig>("config");
  QTest::addColumn<QString>("flag");
  QTest::addColumn<QString>("value");   // null: a flag without a value
  const TrainConfig d;
  TrainConfig c;
  c = d, c.devices = parse_devices("cpu:3");
  QTest::newRow("devices") << c << "--devices" << "cpu:3";
  c = d, c.devices = parse_devices("cuda:local");
  QTest::newRow("one GPU per process") << c << "--devices" << "cuda:local";
  c = d, c.batch = 96;
  QTest::newRow("batch") << c << "--batch" << "96";
  c = d, c.per_replica_batch = true;
  QTest::newRow("per-replica batch") << c << "--per-replica-batch" << QString();
  c = d, c.lr = 0.25;
  QTest::newRow("learning rate") << c << "--lr" << "0.25";
  c = d, c.scale_lr = true;
  QTest::newRow("scaled learning rate") << c << "--scale-lr" << QString();
  c = d, c.epochs = 7;
  QTest::newRow("epochs") << c << "--epochs" << "7";
  c = d, c.seed = std::numeric_limits<uint64_t>::max();
  QTest::newRow("seed") << c << "--seed" << "18446744073709551615";
  c = d, c.limit_train = 2048;
  QTest::newRow("training images") << c << "--limit-train" << "2048";
  c = d, c.limit_val = 500;
  QTest::newRow("validation images") << c << "--limit-val" << "500";
  c = d, c.backend = Backend::Reference;
  QTest::newRow("backend") << c << "--backend" << "reference";
  c = d, c.scenario.straggler.replica = 1, c.scenario.straggler.factor = 2.5;
  QTest::newRow("simulated straggler") << c << "--slow-replica" << "1:2.5";
  c = d, c.data_dir = "/data/with space";
  QTest::newRow("data folder") << c << "--data" << "/data/with space";
  c = d, c.data_dir.clear();
  QTest::newRow("default data folder") << c << "--data" << QString::fromStdString(default_data_dir().string());
}

void TestWorkbenchProcesses::cli_args_carry_every_field() {
  QFETCH(TrainConfig, config);
  QFETCH(QString, flag);
  QFETCH(QString, value);
  const QStringList args = cli_train_args(config);
  QCOMPARE(args.front(), QString("train"));
  QVERIFY2(has_sequence(args, {"--progress", "json"}), qPrintable(args.join(' ')));
  QCOMPARE(args.count(flag), qsizetype(1));
  if (!value.isNull()) QCOMPARE(value_of(args, flag), value);
  // The defaults ask for neither mode flag.
  const QStringList plain = cli_train_args(TrainConfig{});
  QVERIFY(!plain.contains("--per-replica-batch"));
  QVERIFY(!plain.contains("--scale-lr"));
  QCOMPARE(value_of(plain, "--slow-replica"), QString("off"));   // no straggler unless asked for
  QVERIFY(!plain.contains("--trace"));
  QVERIFY(has_sequence(cli_train_args(config, "/runs/x.trace.json"), {"--trace", "/runs/x.trace.json"}));
}

// The other end of the translation: every flag written is one `mirrorbench-cli train` has.
void TestWorkbenchProcesses::cli_args_are_options_of_the_cli() {
#ifndef MB_CLI_PATH
  QSKIP("mirrorbench-cli is not built");
#else
  QProcess p;
  p.start(MB_CLI_PATH, {"train", "--help"});
  QVERIFY(p.waitForFinished(30000));
  const QString help = QString::fromUtf8(p.readAllStandardOutput());
  TrainConfig c;
  c.per_replica_batch = c.scale_lr = true;
  c.scenario.straggler.replica = 1;
  for (const QString& a : cli_train_args(c, "/tmp/t.trace.json"))
    if (a.startsWith("--")) QVERIFY2(help.contains(a), qPrintable(a + " is not in: " + help));
#endif
}

void TestWorkbenchProcesses::learning_rate_is_written_to_be_read_back_exactly() {
  for (double lr : {1e-3, 1e-5, 0.1 + 0.2, 3e-4, 1.0 / 3.0, 0.00123456789012345}) {
    TrainConfig c;
    c.lr = lr;
    bool ok = false;
    QCOMPARE(value_of(cli_train_args(c), "--lr").toDouble(&ok), lr);
    QVERIFY(ok);
  }
}

void TestWorkbenchProcesses::mpirun_stays_on_this_machine_without_a_hostfile() {
  const Launcher l{"/usr/bin/mpirun", "/opt/mb/mirrorbench-cli", false};
  TrainConfig c;
  c.devices = parse_devices("cpu:2");
  const ChildCommand local = mpirun_command(l, c, 3, "");
  QCOMPARE(local.program, QString("/usr/bin/mpirun"));
  QVERIFY(has_sequence(local.args, {"-np", "3"}));
  QVERIFY(has_sequence(local.args, {"--bind-to", "none"}));   // the trainer places the replicas
  QVERIFY(has_sequence(local.args, {"--mca", "btl", "self,vader"}));
  QVERIFY(has_sequence(local.args, {"--mca", "oob_tcp_if_include", "lo"}));
  QVERIFY(!local.args.contains("--hostfile"));
  QVERIFY(!local.args.contains("--allow-run-as-root"));
  // The CLI comes after mpirun's options, followed by exactly cli_train_args().
  const qsizetype cli = local.args.indexOf("/opt/mb/mirrorbench-cli");
  QVERIFY(cli > 0);
  QCOMPARE(local.args.mid(cli + 1), cli_train_args(c));

  const ChildCommand hosts = mpirun_command(Launcher{l.mpirun, l.cli, true}, c, 4, "/etc/mb/hosts");
  QCOMPARE(hosts.args.front(), QString("--allow-run-as-root"));
  QVERIFY(has_sequence(hosts.args, {"--hostfile", "/etc/mb/hosts"}));
  QVERIFY(has_sequence(hosts.args, {"-np", "4"}));
  QVERIFY(!hosts.args.contains("btl"));                 // the hosts pick their transports
  QVERIFY(!hosts.args.contains("oob_tcp_if_include"));
  QVERIFY(hosts.display().contains("--hostfile /etc/mb/hosts"));
}

// ---- The run setup ----------------------------------------------------------------------

void TestWorkbenchProcesses::process_group_needs_mpirun() {
  DeviceInventory inv;
  inv.cpu_cores = 4;
  inv.cpu_name = "Test CPU";
  RunSetupPanel panel(inv, Launcher{});
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(1);
  auto* count = panel.findChild<QSpinBox*>("processes");
  QVERIFY(count);
  QVERIFY(!count->isEnabled());
  QVERIFY(!panel.findChild<QLineEdit*>("hostfile")->isEnabled());
  const QWidget* group = panel.findChild<QWidget*>("process_group");
  QVERIFY2(group->toolTip().contains("install openmpi-bin"), qPrintable(group->toolTip()));
  QVERIFY(panel.findChild<QLabel*>("process_note")->text().contains("install openmpi-bin"));
  QCOMPARE(panel.processes(), 1);
  // A remembered (or scripted) process count without mpirun is explained, not run in-process.
  panel.set_processes(2, {});
  QVERIFY2(panel.problems().join(' ').contains("install openmpi-bin"), qPrintable(panel.problems().join(' ')));

  panel.set_launcher(Launcher{"/usr/bin/mpirun", "/opt/mb/mirrorbench-cli", false});
  QVERIFY(count->isEnabled());
  QVERIFY(panel.findChild<QWidget*>("process_group")->toolTip().isEmpty());
  QVERIFY2(panel.problems().isEmpty(), qPrintable(panel.problems().join("; ")));
  // Busy: the whole group is read-only, and usable again afterwards.
  panel.set_busy(true);
  QVERIFY(!count->isEnabled());
  panel.set_busy(false);
  QVERIFY(count->isEnabled());
}

void TestWorkbenchProcesses::process_choices_are_checked_in_place() {
  DeviceInventory inv;
  inv.cpu_cores = 4;
  inv.cpu_name = "Test CPU";
  RunSetupPanel panel(inv, Launcher{"/usr/bin/mpirun", "/opt/mb/mirrorbench-cli", false});
  auto* message = panel.findChild<QLabel*>("setup_message");
  auto* run = panel.findChild<QPushButton*>("run_button");
  auto* compare = panel.findChild<QPushButton*>("compare_button");
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(1);
  QVERIFY(!compare->isEnabled());   // one replica in one process: nothing to compare
  panel.findChild<QSpinBox*>("processes")->setValue(2);
  QCOMPARE(panel.replicas(), 2);
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cpu:1"));
  QVERIFY(panel.problems().isEmpty());
  QVERIFY(run->isEnabled());
  QVERIFY(compare->isEnabled());    // 2 × cpu:1 against cpu:1
  QVERIFY(compare->toolTip().contains("2 × cpu:1"));
  QVERIFY(panel.findChild<QLabel*>("process_note")->text().contains("shared memory and loopback"));
  QVERIFY(panel.findChild<QLineEdit*>("hostfile")->isEnabled());

  // More replicas than this machine has cores.
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(2);
  panel.findChild<QSpinBox*>("processes")->setValue(3);
  QCOMPARE(panel.replicas(), 6);
  QVERIFY2(message->text().contains("need 6 cores; this machine has 4"), qPrintable(message->text()));
  QVERIFY(!run->isEnabled());
  // The batch is split over all replicas of all processes.
  auto* preset = panel.findChild<QComboBox*>("batch_preset");
  preset->setCurrentIndex(preset->findData(0));   // Custom
  panel.findChild<QSpinBox*>("batch_custom")->setValue(4);
  QVERIFY2(message->text().contains("smaller than the 6 replicas"), qPrintable(message->text()));
  panel.findChild<QSpinBox*>("batch_custom")->setValue(64);

  // A hostfile lifts the core limit of this machine; a missing one is named.
  panel.set_processes(3, tmp_.filePath("no-such-hostfile"));
  QVERIFY2(message->text().contains("does not exist"), qPrintable(message->text()));
  const QString hosts = tmp_.filePath("hosts");
  test::write_bytes(hosts.toStdString(), "nodeA slots=4\nnodeB slots=4\n");
  panel.set_processes(3, hosts);
  QVERIFY2(panel.problems().isEmpty(), qPrintable(panel.problems().join("; ")));
  QVERIFY(panel.findChild<QLabel*>("process_note")->text().contains("on the hosts of hosts"));
  QVERIFY(run->isEnabled());
  QCOMPARE(panel.hostfile(), hosts);
}

void TestWorkbenchProcesses::gpus_across_processes_are_one_each() {
  // The panel asks the core, which refuses GPU devices in a build without the CUDA backend.
  if (!backend_info(Backend::Cuda).built())
    QSKIP(qPrintable(QString::fromUtf8("GPU devices are refused by this build: ") +
                     QString::fromUtf8(backend_info(Backend::Cuda).not_built.data(),
                                       qsizetype(backend_info(Backend::Cuda).not_built.size()))));
  DeviceInventory inv;
  inv.cpu_cores = 4;
  inv.cpu_name = "Test CPU";
  inv.gpus = {GpuInfo{0, "NVIDIA H200", 141ll << 30, 9, 0}, GpuInfo{1, "NVIDIA H200", 141ll << 30, 9, 0}};
  RunSetupPanel panel(inv, Launcher{"/usr/bin/mpirun", "/opt/mb/mirrorbench-cli", false});
  auto* list = panel.findChild<QListWidget*>("device_list");
  list->item(1)->setCheckState(Qt::Checked);
  panel.findChild<QSpinBox*>("processes")->setValue(2);
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cuda:local"));
  QCOMPARE(panel.replicas(), 2);
  QVERIFY(panel.problems().isEmpty());
  QVERIFY(panel.findChild<QLabel*>("process_note")->text().contains("one GPU"));
  panel.findChild<QSpinBox*>("processes")->setValue(3);
  QVERIFY2(panel.problems().join(' ').contains("3 processes need 3 GPUs"), qPrintable(panel.problems().join(' ')));
  panel.findChild<QSpinBox*>("processes")->setValue(2);
  panel.findChild<QSpinBox*>("replicas_per_gpu")->setValue(2);
  QVERIFY(panel.problems().join(' ').contains("run in one process only"));
  panel.findChild<QSpinBox*>("replicas_per_gpu")->setValue(1);
  // A remembered cuda:local comes back as a GPU selection.
  TrainConfig c = panel.config();
  panel.set_processes(1, {});
  panel.set_config(TrainConfig{});
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cpu:1"));
  panel.set_config(c);
  panel.set_processes(2, {});
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cuda:local"));
}

void TestWorkbenchProcesses::process_count_is_remembered() {
  if (!find_launcher().available()) QSKIP(qPrintable(find_launcher().problem()));
  const QString hosts = tmp_.filePath("remembered-hosts");
  test::write_bytes(hosts.toStdString(), "localhost slots=8\n");
  fill(1, 1);
  window_->setup_panel()->set_processes(3, hosts);   // with a hostfile the cores here set no limit
  QVERIFY2(window_->setup_panel()->problems().isEmpty(), qPrintable(window_->setup_panel()->problems().join("; ")));
  window_->close();
  window_ = std::make_unique<MainWindow>();
  QCOMPARE(window_->setup_panel()->processes(), 3);
  QCOMPARE(window_->setup_panel()->hostfile(), hosts);
  window_->setup_panel()->set_processes(1, {});
  window_->close();
}

// ---- The child-process worker against stand-ins -------------------------------------------

namespace {

// What a stand-in child made the trainer call, collected on the test thread (train() blocks it).
struct Seen {
  std::vector<RunConfig> starts;
  std::vector<EpochMetrics> epochs;
  RunCallbacks callbacks() {
    RunCallbacks c;
    c.train.on_start = [this](const RunConfig& rc) { starts.push_back(rc); };
    c.train.on_epoch = [this](const EpochMetrics& m) { epochs.push_back(m); };
    return c;
  }
};

PlannedRun two_processes() { return PlannedRun{TrainConfig{}, RunRole::Run, 2, {}}; }

}  // namespace

void TestWorkbenchProcesses::a_child_that_dies_after_starting_gives_a_failed_record() {
  MpirunTrainer t(stand_in(script("dies", "cat $E/start; cat $E/epoch\n"
                                          "echo 'mirrorbench-cli: process 1 of 2 on host b: replica 1: boom' >&2\n"
                                          "echo 'mirrorbench-cli: replica 1 (cpu): boom' >&2\nexit 1")));
  Seen seen;
  const RunRecord r = t.train(two_processes(), seen.callbacks(), {});
  QCOMPARE(int(seen.starts.size()), 1);
  QCOMPARE(seen.starts.front().processes, 2);
  QCOMPARE(int(seen.epochs.size()), 1);
  QCOMPARE(r.status, RunStatus::Failed);
  QCOMPARE(QString::fromStdString(r.error), QString("replica 1 (cpu): boom"));   // process 0's line
  QCOMPARE(int(r.epochs.size()), 1);
  QCOMPARE(r.config.processes, 2);
  QVERIFY(!r.id.empty());
}

void TestWorkbenchProcesses::a_child_that_fails_before_starting_is_rejected_data() {
  QTest::addColumn<QByteArray>("body");
  QTest::addColumn<QString>("says");
  QTest::newRow("the CLI's line") << QByteArray("echo 'mirrorbench-cli: --devices: bad list' >&2; exit 2")
                                  << "--devices: bad list";
  QTest::newRow("mpirun's own words")
      << QByteArray("echo '------' >&2; echo 'There are not enough slots available in the system' >&2; exit 1")
      << "mpirun exited with code 1: There are not enough slots available";
  QTest::newRow("killed") << QByteArray("kill -9 $$") << "mpirun was ended by a signal";
  QTest::newRow("silent") << QByteArray("exit 0") << "mpirun exited with code 0 and no end event";
}

void TestWorkbenchProcesses::a_child_that_fails_before_starting_is_rejected() {
  QFETCH(QByteArray, body);
  QFETCH(QString, says);
  MpirunTrainer t(stand_in(script(QString("fails-%1").arg(qHash(QByteArray(QTest::currentDataTag()))), body)));
  Seen seen;
  QVERIFY(test::expect_error<Error>([&] { t.train(two_processes(), seen.callbacks(), {}); }, says));
  QVERIFY(seen.starts.empty());
}

// The child's processes install their stop handler before the start event; SIGUSR1 earlier
// would kill them (the default action). The stand-in dies from an early one, like they would.
void TestWorkbenchProcesses::stop_before_the_start_event_waits_for_it() {
  MpirunTrainer t(stand_in(script("late-start", "sleep 0.5\ntrap 'cat $E/end-stopped; exit 0' USR1\ncat $E/start\n"
                                                "i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; exit 3")));
  t.request_stop();   // at once: the child is still "loading"
  Seen seen;
  QCOMPARE(t.train(two_processes(), seen.callbacks(), {}).status, RunStatus::Stopped);
}

void TestWorkbenchProcesses::a_child_that_ignores_stop_is_ended_data() {
  QTest::addColumn<QByteArray>("traps");
  QTest::newRow("SIGUSR1 ignored") << QByteArray("trap '' USR1");
  QTest::newRow("SIGUSR1 and SIGTERM ignored") << QByteArray("trap '' USR1 TERM");
}

void TestWorkbenchProcesses::a_child_that_ignores_stop_is_ended() {
  QFETCH(QByteArray, traps);
  // exec: the sleep keeps the ignored signals, as a hung mpirun would.
  MpirunTrainer t(stand_in(script(QString("deaf-%1").arg(traps.size()), traps + "\ncat $E/start\nexec sleep 60")));
  t.set_grace_ms(300, 300);
  qint64 pid = 0;
  RunCallbacks cb;
  cb.train.on_start = [&](const RunConfig&) {
    pid = t.child_pid();
    t.request_stop();
  };
  const RunRecord r = t.train(two_processes(), cb, {});
  QVERIFY(pid > 0);
  QCOMPARE(r.status, RunStatus::Failed);
  QVERIFY2(QString::fromStdString(r.error).contains("did not stop within 0.3 s"), r.error.c_str());
  QCOMPARE(t.child_pid(), qint64(0));
  QVERIFY(::kill(pid_t(pid), 0) != 0);   // gone (reaped by QProcess)
}

// The window going away mid-run: the controller's shutdown stops the child and delivers the
// record (saved by the plan executor) before it returns.
void TestWorkbenchProcesses::shutdown_delivers_the_record_before_returning() {
  QTemporaryDir store_dir;
  {
    RunController c;
    c.set_launcher(stand_in(script("polite", "trap 'cat $E/end-stopped; exit 0' USR1\ncat $E/start\ncat $E/epoch\n"
                                             "i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 3")));
    c.set_store(RunStore(store_dir.path().toStdString()));
    QSignalSpy epochs(&c, &RunController::epoch_finished), finished(&c, &RunController::run_finished);
    c.start(Plan{PlanKind::Single, {two_processes()}, {}});
    QVERIFY(epochs.wait(30000));
    c.shutdown();
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().at(1).value<RunRecord>().status, RunStatus::Stopped);
    QCOMPARE(int(RunStore(store_dir.path().toStdString()).load_runs().runs.size()), 1);   // saved
    c.start(Plan{PlanKind::Single, {two_processes()}, {}});   // closed: nothing happens
    QVERIFY(!c.busy());
  }
  // One that does not stop: ended after the grace period, still within shutdown().
  RunController c;
  c.set_launcher(stand_in(script("deaf-shutdown", "trap '' USR1\ncat $E/start\nexec sleep 60")));
  c.mpirun_trainer().set_grace_ms(300, 300);
  QSignalSpy started(&c, &RunController::run_started), finished(&c, &RunController::run_finished);
  c.start(Plan{PlanKind::Single, {two_processes()}, {}});
  QVERIFY(started.wait(30000));
  c.shutdown();
  QCOMPARE(finished.count(), 1);
  QCOMPARE(finished.front().at(1).value<RunRecord>().status, RunStatus::Failed);
}

void TestWorkbenchProcesses::a_launcher_that_cannot_start_is_reported() {
  struct Case {
    Launcher launcher;
    QString says;
  };
  const Case cases[] = {
      {Launcher{}, "mpirun is not on PATH: install openmpi-bin"},
      {Launcher{tmp_.filePath("no-such-mpirun"), "/bin/true", false}, "could not be started"},
  };
  for (const Case& c : cases) {
    MpirunTrainer t(c.launcher);
    QVERIFY(test::expect_error<Error>([&] { t.train(two_processes(), RunCallbacks{}, {}); }, c.says));
  }
}

// ---- The real mpirun ----------------------------------------------------------------------

void TestWorkbenchProcesses::two_process_compare_reaches_history_and_card() {
  REQUIRE_MPIRUN();
  fill(1, 2);
  RunController* controller = window_->controller();
  QSignalSpy started(controller, &RunController::run_started);
  int child_steps = 0, child_epochs = 0;
  connect(controller, &RunController::step_progress, this, [&] { child_steps += started.count() == 2; });
  connect(controller, &RunController::epoch_finished, this, [&] { child_epochs += started.count() == 2; });
  QSignalSpy done(window_.get(), &MainWindow::plan_done);
  const int rows_before = window_->history()->rowCount();
  QTest::mouseClick(window_->findChild<QPushButton*>("compare_button"), Qt::LeftButton);
  QVERIFY(done.wait(kRunTimeoutMs));
  QVERIFY2(done.front().front().toBool(), qPrintable(window_->setup_panel()->findChild<QLabel*>("setup_message")->text()));
  QCOMPARE(started.count(), 2);
  QCOMPARE(started[1][1].value<RunConfig>().processes, 2);
  QVERIFY(child_steps >= 1);
  QCOMPARE(child_epochs, 1);

  HistoryModel* h = window_->history();
  QCOMPARE(h->rowCount(), rows_before + 2);
  const RunRecord run = h->runs().back();
  const RunRecord& base = h->runs()[h->runs().size() - 2];
  QCOMPARE(run.status, RunStatus::Completed);
  QCOMPARE(run.config.processes, 2);
  QCOMPARE(run.config.replicas, 2);
  QCOMPARE(QString::fromStdString(format_devices(run.config.devices)), QString("cpu:1"));
  QCOMPARE(QString::fromStdString(run.config.communicator), QString("mpi+threads"));
  // The child trained what the panel said.
  QCOMPARE(run.config.global_batch, int64_t(64));
  QCOMPARE(run.config.seed, uint64_t(3));
  QCOMPARE(run.config.train_size, int64_t(kTrain));
  QCOMPARE(run.config.val_size, int64_t(kVal));
  QCOMPARE(run.config.learning_rate, 1e-3);
  QCOMPARE(QString::fromStdString(run.config.data_dir), data_dir_);
  QCOMPARE(int(run.epochs.size()), 1);
  QCOMPARE(read_run_json(h->store().file_for(run.id)).config.processes, 2);
  // The history and the card treat it like any other run against its baseline.
  QCOMPARE(h->data(h->index(h->row_of(run.id), HistoryModel::Devices), Qt::DisplayRole).toString(), QString("2 × cpu:1"));
  QCOMPARE(base.config.processes, 1);
  QVERIFY(h->is_baseline(base));
  QCOMPARE(h->baseline_for(run.config)->id, base.id);
  const QString card = window_->chart_panel()->summary_html();
  QVERIFY2(card.contains("2 processes") && card.contains("time per epoch") && card.contains("What bounds it."), qPrintable(card));
}

void TestWorkbenchProcesses::where_it_runs() {
  QTest::addColumn<int>("processes");
  QTest::addRow("in-process") << 1;
  QTest::addRow("2 processes") << 2;
}

// Fills the panel for a long run in one process or across `processes` (mpirun) and starts it;
// true once the first step has reported (the run is under way). *records_before: the run
// records on disk before it started.
bool TestWorkbenchProcesses::start_long_run(int processes, std::set<fs::path>* records_before) {
  fill(500, processes);
  *records_before = test::run_record_paths(window_->history()->store().runs_dir());
  QSignalSpy steps(window_->controller(), &RunController::step_progress);
  QTest::mouseClick(window_->findChild<QPushButton*>("run_button"), Qt::LeftButton);
  return steps.wait(kRunTimeoutMs);
}

#define REQUIRE_MPIRUN_FOR(processes) \
  do {                                \
    if ((processes) > 1) REQUIRE_MPIRUN(); \
  } while (false)

void TestWorkbenchProcesses::stop_gives_a_stopped_record() {
  QFETCH(int, processes);
  REQUIRE_MPIRUN_FOR(processes);
  std::set<fs::path> before;
  QVERIFY(start_long_run(processes, &before));
  QSignalSpy done(window_.get(), &MainWindow::plan_done);
  QTest::mouseClick(window_->findChild<QPushButton*>("stop_button"), Qt::LeftButton);
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), false);
  const RunRecord r = last_record();
  QCOMPARE(r.status, RunStatus::Stopped);
  QCOMPARE(r.config.processes, processes);
  QVERIFY(int(r.epochs.size()) < 500);
  QCOMPARE(test::run_record_paths(window_->history()->store().runs_dir()).size(), before.size() + 1);
  QCOMPARE(read_run_json(window_->history()->store().file_for(r.id)).status, RunStatus::Stopped);
  QVERIFY(window_->findChild<QPushButton*>("run_button")->isEnabled());
}

void TestWorkbenchProcesses::closing_mid_run_stops_and_saves() {
  QFETCH(int, processes);
  REQUIRE_MPIRUN_FOR(processes);
  std::set<fs::path> before;
  QVERIFY(start_long_run(processes, &before));
  const fs::path runs = window_->history()->store().runs_dir();
  window_->close();   // mid-run: stops the run (the child, across processes), saves, then closes
  QTRY_VERIFY_WITH_TIMEOUT(!window_->isVisible(), kRunTimeoutMs);
  QVERIFY(!window_->controller()->busy());
  QCOMPARE(test::run_record_paths(runs).size(), before.size() + 1);
  const RunRecord r = last_record();
  QCOMPARE(r.status, RunStatus::Stopped);
  QCOMPARE(r.config.processes, processes);
  QVERIFY(fs::exists(window_->history()->store().file_for(r.id)));
}

// The window destroyed without close() (application teardown): the controller's shutdown
// waits for the trainer (or the child) and saves its record before the destructor returns.
void TestWorkbenchProcesses::destroying_mid_run_stops_and_saves() {
  QFETCH(int, processes);
  REQUIRE_MPIRUN_FOR(processes);
  std::set<fs::path> before;
  QVERIFY(start_long_run(processes, &before));
  const fs::path runs = window_->history()->store().runs_dir();
  window_.reset();
  std::set<fs::path> added;
  for (const auto& p : test::run_record_paths(runs))
    if (!before.count(p)) added.insert(p);
  QCOMPARE(int(added.size()), 1);
  const RunRecord r = read_run_json(*added.begin());
  QCOMPARE(r.status, RunStatus::Stopped);
  QCOMPARE(r.config.processes, processes);
  QVERIFY(int(r.epochs.size()) < 500);
}

void TestWorkbenchProcesses::child_failure_is_reported() {
  REQUIRE_MPIRUN();
  fill(1, 2);
  window_->set_scripted(true);   // past the panel's own check of the folder, as a script can
  TrainConfig c = window_->setup_panel()->config();
  c.data_dir = tmp_.filePath("no-such-folder").toStdString();
  const int rows_before = window_->history()->rowCount();
  QSignalSpy rejected(window_->controller(), &RunController::run_rejected);
  QSignalSpy done(window_.get(), &MainWindow::plan_done);
  QVERIFY(window_->start_plan(PlanKind::Single, c, 2, {}));
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), false);
  QCOMPARE(rejected.count(), 1);
  const QString message = rejected.front().at(1).toString();
  QVERIFY2(message.contains("no-such-folder") && message.contains("does not exist"), qPrintable(message));
  QCOMPARE(window_->history()->rowCount(), rows_before);   // no run happened, no record
  QVERIFY(window_->setup_panel()->findChild<QLabel*>("setup_message")->text().contains("does not exist"));
}

// `mirrorbench --run --processes 2 ... --quit`, as a slide script would run it.
void TestWorkbenchProcesses::scripted_mode_runs_across_processes() {
#ifndef MB_GUI_PATH
  QSKIP("the mirrorbench executable is not built");
#else
  QTemporaryDir out;
  auto run = [&](const QStringList& args) { return test::run_gui(QStringLiteral(MB_GUI_PATH), args, out.path(), kRunTimeoutMs); };
  // Bad process options are usage errors, with or without mpirun.
  QCOMPARE(run({"--run", "--processes", "0", "--quit"}), 2);
  QCOMPARE(run({"--run", "--processes", "2", "--hostfile", out.filePath("none"), "--quit"}), 2);
  REQUIRE_MPIRUN();
  const QString png = out.filePath("c.png");
  QCOMPARE(run({"--run", "--processes", "2", "--devices", "cpu:1", "--epochs", "1", "--data", data_dir_,
                "--limit-train", "256", "--limit-val", "128", "--export-png", png, "--export-size", "800x500", "--quit"}),
           0);
  QCOMPARE(QImage(png).size(), QSize(800, 500));
  const auto files = test::run_record_paths(fs::path(out.path().toStdString()) / "runs");
  QCOMPARE(int(files.size()), 1);
  const RunRecord r = read_run_json(*files.begin());
  QCOMPARE(r.config.processes, 2);
  QCOMPARE(r.status, RunStatus::Completed);
  // Process 0 wrote the run's trace, kept beside the record under its id (nothing left over).
  const RunStore store(fs::path(out.path().toStdString()));
  QVERIFY(fs::exists(store.trace_file_for(r.id)));
  for (const auto& e : fs::directory_iterator(store.runs_dir()))
    QVERIFY2(e.path().filename().string().rfind("child-", 0) != 0, e.path().c_str());
#endif
}

QTEST_MAIN(TestWorkbenchProcesses)
#include "test_workbench_processes.moc"

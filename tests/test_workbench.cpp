// GUI tests that drive the real workbench window on the offscreen platform: fill the fields,
// click the buttons, wait for the trainer, then check charts, history, files and exports
// against the run records. Tiny synthetic IDX data (512 training images) keeps runs short.
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QGroupBox>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QStatusBar>
#include <QTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QWheelEvent>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include <spdlog/spdlog.h>

#include "app/main_window.h"
#include "app/shown_runs.h"
#include "app/script_options.h"
#include "charts/chart_content.h"
#include "charts/chart_panel.h"
#include "charts/comparison_card.h"
#include "common/export_file.h"
#include "common/format.h"
#include "charts/laid_out_text.h"
#include "insight/bar_chart_render.h"
#include "insight/bar_chart_view.h"
#include "insight/insight_panel.h"
#include "experiment/baseline.h"
#include "experiment/plans.h"
#include "experiment/verdict.h"
#include "history/history_model.h"
#include "history/history_view.h"
#include "log/log_panel.h"
#include "records/run_record.h"
#include "run/progress_panel.h"
#include "run/run_controller.h"
#include "model/model_text.h"
#include "setup/model_picker.h"
#include "setup/run_setup_panel.h"
#include "gui_process.h"
#include "gui_window_fixture.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace mb;

namespace {

constexpr int kTrain = 512, kVal = 256;
constexpr int kRunTimeoutMs = 60000;

QLineSeries* find_series(QChart* chart, const QString& id) {
  for (QAbstractSeries* s : chart->series()) {
    if (s->objectName() == id) return qobject_cast<QLineSeries*>(s);
  }
  return nullptr;
}

// A minimal RFC 4180 reader (quoted fields with doubled quotes), enough for our exports.
QList<QStringList> parse_csv(const QString& text) {
  QList<QStringList> rows;
  QStringList row;
  QString field;
  bool quoted = false;
  for (qsizetype i = 0; i < text.size(); ++i) {
    const QChar ch = text[i];
    if (quoted) {
      if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (ch == '"') quoted = false;
      else field += ch;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      row << field, field.clear();
    } else if (ch == '\n') {
      row << field, field.clear();
      rows << row, row.clear();
    } else if (ch != '\r') {
      field += ch;
    }
  }
  if (!field.isEmpty() || !row.isEmpty()) rows << (row << field);
  return rows;
}

int json_files(const fs::path& dir) { return int(test::run_record_paths(dir).size()); }

// A finished record with one epoch, for model and card tests that need no training.
RunRecord made_run(const std::string& id, const std::string& devices, int replicas, int64_t batch,
                   const std::string& start, RunStatus status = RunStatus::Completed) {
  RunRecord r;
  r.id = id;
  r.status = status;
  r.config.devices = parse_devices(devices);
  r.config.replicas = replicas;
  r.config.global_batch = batch;
  r.config.per_replica_batch = batch / replicas;
  r.config.dataset = "synthetic";
  r.config.train_size = 512;
  r.config.backend = Backend::OneDnn;
  r.config.start_time = start;
  r.epochs.push_back(EpochMetrics{1, 2.0 / replicas, 0.0, 0.9, 0.7, 0.8, 0.72, 300, {}, {}});
  return r;
}

}  // namespace

class TestWorkbench : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();

  void run_fills_charts_and_history();
  void stop_mid_run_saves_stopped_record();
  void compare_runs_baseline_then_devices();
  void a_compare_keeps_every_chart_text_whole();
  void straggler_demo_runs_lock_step_then_balanced();
  void selecting_runs_overlays_them();
  void export_png_has_requested_size_data();
  void export_png_has_requested_size();
  void export_csv_parses_back_to_the_records();
  void corrupt_history_file_is_skipped();
  void history_baselines_match_find_baseline();
  void two_runs_against_two_baselines_agree_everywhere();
  void running_trace_is_thinned_evenly();
  void classic_criteria_only_for_classic_settings();
  void shutdown_with_a_queued_run_ends_the_plan();
  void hand_copied_run_file_is_its_own_run();
  void invalid_batch_is_explained_in_place();
  void the_model_group_reads_texts_presets_and_keras_files();
  void the_wheel_scrolls_past_unfocused_fields();
  void data_picker_reads_other_formats();
  void log_panel_filters_by_level();
  void device_list_offers_gpus_and_explains_their_absence();
  void remedy_picker_carries_each_remedy();
  void rename_delete_and_pin_persist();
  void settings_are_remembered();
  void presets_restore_and_compare_shows_the_training_tab();
  void exports_confirm_and_remember_their_folder();
  void scripted_mode_exit_codes();

 private:
  void fill(int epochs, int replicas, int batch = 64);
  RunRecord click_and_wait(const char* button) { return fx_.click_and_wait(button, kRunTimeoutMs); }

  test::WindowFixture fx_{kTrain, kVal};
  // Short names for the fixture's parts, as the test bodies use them.
  QTemporaryDir& home_ = fx_.home;
  const QString& data_dir_ = fx_.data_dir;
  std::unique_ptr<MainWindow>& window_ = fx_.window;
};

void TestWorkbench::initTestCase() {
  const QString failed = fx_.prepare();
  QVERIFY2(failed.isEmpty(), qPrintable(failed));
}

void TestWorkbench::init() { QVERIFY(fx_.open_window()); }

void TestWorkbench::cleanup() { fx_.close_window(); }

void TestWorkbench::the_wheel_scrolls_past_unfocused_fields() {
  // Scrolling the setup column over "Epochs" must not change the epochs (it did, under Xvfb):
  // an unfocused field passes the wheel on to the column; a focused one takes it. (Qt hands a
  // synthesized wheel event to its receiver only, never to the parents, so that the column then
  // scrolls was checked under Xvfb with xdotool's real wheel clicks.)
  window_->show();
  QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
  auto* epochs = window_->findChild<QSpinBox*>("epochs");
  QVERIFY(epochs);
  epochs->setValue(5);
  window_->findChild<QPushButton*>("run_button")->setFocus();
  QVERIFY(!epochs->hasFocus());
  auto wheel = [&](int steps) {
    const QPointF at(epochs->width() / 2.0, epochs->height() / 2.0);
    QWheelEvent e(at, epochs->mapToGlobal(at), QPoint(), QPoint(0, -120 * steps), Qt::NoButton, Qt::NoModifier,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(epochs, &e);
  };
  wheel(3);
  QCOMPARE(epochs->value(), 5);
  QCOMPARE(epochs->focusPolicy(), Qt::StrongFocus);   // the wheel does not focus it either
  epochs->setFocus();
  QVERIFY(epochs->hasFocus());
  wheel(1);
  QCOMPARE(epochs->value(), 4);   // focused: the field takes the wheel, as Qt's fields do
}

void TestWorkbench::fill(int epochs, int replicas, int batch) {
  const QString problems = fx_.fill({.epochs = epochs, .replicas = replicas, .batch = batch, .seed = 3});
  QVERIFY2(problems.isEmpty(), qPrintable(problems));
}

void TestWorkbench::run_fills_charts_and_history() {
  fill(2, 1);
  const int rows_before = window_->history()->rowCount();
  const RunRecord r = click_and_wait("run_button");
  QCOMPARE(r.status, RunStatus::Completed);
  QCOMPARE(int(r.epochs.size()), 2);
  QCOMPARE(r.config.train_size, int64_t(kTrain));
  QCOMPARE(window_->history()->rowCount(), rows_before + 1);

  // The record on disk is the record in the table.
  const auto file = window_->history()->store().file_for(r.id);
  QVERIFY(fs::exists(file));
  const RunRecord on_disk = read_run_json(file);
  QCOMPARE(int(on_disk.epochs.size()), 2);
  QCOMPARE(on_disk.epochs[1].val_acc, r.epochs[1].val_acc);

  // One point per epoch, holding the record's values, on every chart.
  ChartPanel* charts = window_->chart_panel();
  charts->refresh_now();
  const QString id = QString::fromStdString(r.id);
  struct Check {
    ChartKind chart;
    const char* metric;
    double (*value)(const EpochMetrics&);
  };
  const Check checks[] = {
      {ChartKind::EpochTime, "/time", [](const EpochMetrics& m) { return m.time_s; }},
      {ChartKind::Accuracy, "/val_acc", [](const EpochMetrics& m) { return m.val_acc * 100; }},
      {ChartKind::Accuracy, "/train_acc", [](const EpochMetrics& m) { return m.train_acc * 100; }},
      {ChartKind::Loss, "/val_loss", [](const EpochMetrics& m) { return m.val_loss; }},
      {ChartKind::Loss, "/train_loss", [](const EpochMetrics& m) { return m.train_loss; }},
  };
  for (const Check& c : checks) {
    QLineSeries* s = find_series(charts->chart(c.chart), id + c.metric);
    QVERIFY2(s, qPrintable(id + c.metric));
    const auto points = s->points();
    QCOMPARE(points.size(), qsizetype(r.epochs.size()));
    for (qsizetype i = 0; i < points.size(); ++i) {
      QCOMPARE(points[i].x(), double(r.epochs[std::size_t(i)].epoch));
      QCOMPARE(points[i].y(), c.value(r.epochs[std::size_t(i)]));
    }
  }
  // Axes are titled with units (the chart's title says what is measured).
  const auto axes = charts->chart(ChartKind::EpochTime)->axes(Qt::Vertical);
  QVERIFY(!axes.isEmpty());
  QCOMPARE(axes.front()->titleText(), QString("s"));
}

void TestWorkbench::stop_mid_run_saves_stopped_record() {
  fill(500, 1);   // far more epochs than the test will wait for
  const int files_before = json_files(window_->history()->store().runs_dir());
  QSignalSpy done(window_.get(), &MainWindow::plan_done);
  QTest::mouseClick(window_->findChild<QPushButton*>("run_button"), Qt::LeftButton);
  QVERIFY(window_->controller()->busy());
  auto* stop = window_->findChild<QPushButton*>("stop_button");
  QVERIFY(stop->isEnabled());

  // The charts are live: the run's first epoch appears before the run ends.
  QTRY_VERIFY_WITH_TIMEOUT(
      [&] {
        QLineSeries* s = find_series(window_->chart_panel()->chart(ChartKind::Accuracy), "live/val_acc");
        return s && s->count() >= 1;
      }(),
      kRunTimeoutMs);
  QTRY_VERIFY_WITH_TIMEOUT(window_->progress_panel()->details().contains("img/s"), kRunTimeoutMs);
  QVERIFY(window_->progress_panel()->details().contains("ETA"));

  QTest::mouseClick(stop, Qt::LeftButton);
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), false);
  const RunRecord r = window_->history()->runs().back();
  QCOMPARE(r.status, RunStatus::Stopped);
  QVERIFY(!r.epochs.empty());
  QVERIFY(int(r.epochs.size()) < 500);
  QCOMPARE(json_files(window_->history()->store().runs_dir()), files_before + 1);
  QCOMPARE(read_run_json(window_->history()->store().file_for(r.id)).status, RunStatus::Stopped);
  QVERIFY(window_->findChild<QPushButton*>("run_button")->isEnabled());
}

void TestWorkbench::compare_runs_baseline_then_devices() {
  if (window_->setup_panel()->findChild<QSpinBox*>("cpu_replicas")->maximum() < 2)
    QSKIP("Compare needs two CPU replicas and this machine offers one core");
  fill(1, 2);
  const int rows_before = window_->history()->rowCount();
  const RunRecord multi = click_and_wait("compare_button");
  QCOMPARE(window_->history()->rowCount(), rows_before + 2);
  QCOMPARE(multi.status, RunStatus::Completed);
  QCOMPARE(QString::fromStdString(format_devices(multi.config.devices)), QString("cpu:2"));
  const RunRecord& base = window_->history()->runs()[window_->history()->runs().size() - 2];
  QCOMPARE(QString::fromStdString(format_devices(base.config.devices)), QString("cpu:1"));
  QCOMPARE(base.config.global_batch, multi.config.global_batch);
  // The fresh single-device run is the baseline, drawn on the charts next to the run.
  QVERIFY(window_->history()->is_baseline(base));
  window_->chart_panel()->refresh_now();
  QChart* time = window_->chart_panel()->chart(ChartKind::EpochTime);
  QVERIFY(find_series(time, QString::fromStdString(multi.id) + "/time"));
  QLineSeries* b = find_series(time, QString::fromStdString(base.id) + "/time");
  QVERIFY(b);
  QCOMPARE(b->pen().style(), Qt::DashLine);
  // The speedup/reduction is stated on the chart and the criteria on the card.
  QVERIFY2(time->title().contains("vs baseline"), qPrintable(time->title()));
  const QString card = window_->chart_panel()->summary_html();
  QVERIFY2(card.contains("time per epoch"), qPrintable(card));   // the verdict's line, first
  // A 1-epoch run on 512 images is not the classic task: its criteria are n/a, in grey, with
  // why - never a red "no".
  QVERIFY2(card.contains("Classic task: n/a for these settings (1 epoch, global batch 64, 512 training images, 256 "
                         "validation images)"),
           qPrintable(card));
  QVERIFY(!card.contains("\u2718"));
}

// A real Compare in the window at 1366x768: every text of the training charts and of Where
// the time goes is whole (charts/laid_out_text.h), and so is every text of the exported PNG.
void TestWorkbench::a_compare_keeps_every_chart_text_whole() {
  if (window_->setup_panel()->findChild<QSpinBox*>("cpu_replicas")->maximum() < 2)
    QSKIP("Compare needs two CPU replicas and this machine offers one core");
  fill(2, 2);
  QCOMPARE(click_and_wait("compare_button").status, RunStatus::Completed);
  window_->resize(1366, 768);
  QStringList cut;
  for (int tab = 0; tab < 2; ++tab) {   // Training, Where the time goes
    window_->view_tabs()->setCurrentIndex(tab);
    window_->chart_panel()->refresh_now();
    window_->insight_panel()->refresh_now();
    for (int i = 0; i < 5; ++i) QTest::qWait(20);   // laid out, the axes fitted to their size
    QWidget* page = window_->view_tabs()->currentWidget();
    for (QChartView* view : page->findChildren<QChartView*>()) {
      QVERIFY(view->isVisible());
      for (const LaidOutText& t : laid_out_texts(view->chart()))
        if (t.cut) cut << view->objectName() + ": " + t.text;
    }
    for (BarChartView* view : page->findChildren<BarChartView*>())
      for (const LaidOutText& t : laid_out_texts(view->content(), QRectF(view->rect())))
        if (t.cut) cut << view->objectName() + ": " + t.text;
  }
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join("; ")));

  QTemporaryDir out;
  TextRecorder recorder;
  QString error;
  QVERIFY2(window_->export_png(out.filePath("charts.png"), QSize(1600, 1000), std::nullopt, &error), qPrintable(error));
  QVERIFY(!recorder.texts().empty());
  for (const LaidOutText& t : recorder.cut()) cut << t.where + ": " + t.text;
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join("; ")));
}

// The straggler demonstration in one click: the same run lock-step, then with balanced shares;
// the balanced run is nobody's baseline and its record holds its share changes.
void TestWorkbench::straggler_demo_runs_lock_step_then_balanced() {
  if (window_->setup_panel()->findChild<QSpinBox*>("cpu_replicas")->maximum() < 2)
    QSKIP("the demonstration needs two CPU replicas and this machine offers one core");
  fill(1, 2);
  auto* straggler = window_->setup_panel()->findChild<QGroupBox*>("straggler_group");
  QVERIFY(straggler);
  auto* demo = window_->setup_panel()->findChild<QPushButton*>("lock_step_vs_balanced_button");
  QVERIFY(demo);
  QVERIFY(!demo->isEnabled());   // part of the straggler's group: off with it
  straggler->setChecked(true);
  QVERIFY(demo->isEnabled());
  const int rows_before = window_->history()->rowCount();
  const RunRecord balanced = click_and_wait("lock_step_vs_balanced_button");
  QCOMPARE(window_->history()->rowCount(), rows_before + 2);
  QCOMPARE(balanced.status, RunStatus::Completed);
  QVERIFY(balanced.config.scenario.balance);
  QVERIFY(!balanced.config.share_changes.empty());
  QVERIFY(balanced.replicas_in_sync);
  const RunRecord& lock_step = window_->history()->runs()[window_->history()->runs().size() - 2];
  QVERIFY(!lock_step.config.scenario.balance);
  QCOMPARE(lock_step.config.scenario.straggler.replica, balanced.config.scenario.straggler.replica);
  QVERIFY(!window_->history()->is_baseline(balanced));
  // The switch in the run setup was left as it was (the plan sets it per run).
  QVERIFY(!window_->setup_panel()->findChild<QCheckBox*>("balance")->isChecked());
  QVERIFY(!window_->setup_panel()->config().scenario.balance);
}

void TestWorkbench::selecting_runs_overlays_them() {
  fill(1, 1);
  const RunRecord a = click_and_wait("run_button");
  QCOMPARE(a.status, RunStatus::Completed);
  window_->setup_panel()->findChild<QSpinBox*>("seed")->setValue(4);
  const RunRecord b = click_and_wait("run_button");
  QCOMPARE(b.status, RunStatus::Completed);

  window_->history_view()->select_ids({a.id, b.id});
  window_->chart_panel()->refresh_now();
  QChart* acc = window_->chart_panel()->chart(ChartKind::Accuracy);
  QLineSeries* sa = find_series(acc, QString::fromStdString(a.id) + "/val_acc");
  QLineSeries* sb = find_series(acc, QString::fromStdString(b.id) + "/val_acc");
  QVERIFY(sa && sb);
  QVERIFY(sa->pen().color() != sb->pen().color());   // runs are told apart by colour
  QVERIFY(sa->name() != sb->name());                 // and by name
}

void TestWorkbench::export_png_has_requested_size_data() {
  QTest::addColumn<int>("chart");   // -1: all charts as one image
  QTest::addColumn<QSize>("size");
  QTest::newRow("all 1600x1000") << -1 << QSize(1600, 1000);
  QTest::newRow("all 640x400") << -1 << QSize(640, 400);
  QTest::newRow("time 1920x1080") << int(ChartKind::EpochTime) << QSize(1920, 1080);
  QTest::newRow("accuracy 800x600") << int(ChartKind::Accuracy) << QSize(800, 600);
  QTest::newRow("loss 300x1200") << int(ChartKind::Loss) << QSize(300, 1200);
}

void TestWorkbench::export_png_has_requested_size() {
  QFETCH(int, chart);
  QFETCH(QSize, size);
  QTemporaryDir out;
  const QString file = out.filePath("chart.png");
  QString error;
  const auto which = chart < 0 ? std::nullopt : std::optional<ChartKind>(static_cast<ChartKind>(chart));
  QVERIFY2(window_->export_png(file, size, which, &error), qPrintable(error));
  QImage image(file);
  QVERIFY(!image.isNull());
  QCOMPARE(image.size(), size);
  // Not blank: a chart has dark ink (axes, text) on its white background.
  int dark = 0;
  for (int y = 0; y < image.height(); y += 4)
    for (int x = 0; x < image.width(); x += 4) dark += qGray(image.pixel(x, y)) < 128;
  QVERIFY(dark > 20);
}

void TestWorkbench::export_csv_parses_back_to_the_records() {
  if (window_->history()->runs().empty()) {
    fill(2, 1);
    QCOMPARE(click_and_wait("run_button").status, RunStatus::Completed);
  }
  std::vector<std::string> ids;
  for (const auto& r : window_->history()->runs()) ids.push_back(r.id);
  if (ids.size() > 3) ids.erase(ids.begin(), ids.end() - 3);
  window_->history_view()->select_ids(ids);

  QTemporaryDir out;
  const QString file = out.filePath("runs.csv");
  QString error;
  QVERIFY2(window_->export_csv(file, &error), qPrintable(error));
  QFile f(file);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QStringList> rows = parse_csv(QString::fromUtf8(f.readAll()));
  QVERIFY(rows.size() >= 2);
  const QStringList header = rows.front();
  const int c_id = int(header.indexOf("run_id")), c_epoch = int(header.indexOf("epoch"));
  const int c_time = int(header.indexOf("time_s")), c_val = int(header.indexOf("val_acc"));
  const int c_loss = int(header.indexOf("train_loss")), c_batch = int(header.indexOf("global_batch"));
  const int c_devices = int(header.indexOf("devices"));
  QVERIFY(c_id >= 0 && c_epoch >= 0 && c_time >= 0 && c_val >= 0 && c_loss >= 0 && c_batch >= 0 && c_devices >= 0);

  // One row per run x epoch, for exactly the selected runs, with the same numbers.
  std::size_t expected_rows = 0;
  for (const auto& id : ids) expected_rows += window_->history()->find(id)->epochs.size();
  QCOMPARE(std::size_t(rows.size() - 1), expected_rows);
  for (qsizetype i = 1; i < rows.size(); ++i) {
    const QStringList& row = rows[i];
    QCOMPARE(row.size(), header.size());
    const RunRecord* r = window_->history()->find(row[c_id].toStdString());
    QVERIFY2(r, qPrintable(row[c_id]));
    QVERIFY(std::find(ids.begin(), ids.end(), r->id) != ids.end());
    const int epoch = row[c_epoch].toInt();
    QVERIFY(epoch >= 1 && epoch <= int(r->epochs.size()));
    const EpochMetrics& m = r->epochs[std::size_t(epoch - 1)];
    QCOMPARE(row[c_time].toDouble(), m.time_s);
    QCOMPARE(row[c_val].toDouble(), m.val_acc);
    QCOMPARE(row[c_loss].toDouble(), m.train_loss);
    QCOMPARE(row[c_batch].toLongLong(), qlonglong(r->config.global_batch));
    QCOMPARE(row[c_devices], QString::fromStdString(format_devices(r->config.devices)));
  }
}

void TestWorkbench::corrupt_history_file_is_skipped() {
  window_.reset();
  QTemporaryDir home;
  const QByteArray saved = qgetenv("MIRRORBENCH_HOME");
  qputenv("MIRRORBENCH_HOME", home.path().toUtf8());
  // A failing check returns early: the later tests must not follow into the deleted folder.
  const auto restore = qScopeGuard([&] {
    window_.reset();
    qputenv("MIRRORBENCH_HOME", saved);
  });
  const fs::path runs = fs::path(home.path().toStdString()) / "runs";
  fs::create_directories(runs);
  // One good record, one file that is not JSON, one JSON that is not a run record.
  RunRecord good;
  good.config.devices = parse_devices("cpu:1");
  good.config.dataset = "synthetic";
  good.config.start_time = "2026-01-01T00:00:00Z";
  good.id = "good-run";
  good.epochs.push_back(EpochMetrics{1, 1.5, 0.0, 0.9, 0.7, 0.8, 0.72, 300, {}, {}});
  write_run_json(good, runs / "good-run.json");
  test::write_bytes(runs / "broken.json", "{ \"id\": \"broken\", \"epochs\": [ {");
  test::write_bytes(runs / "foreign.json", "{\"hello\": \"world\"}");

  window_ = std::make_unique<MainWindow>();
  window_->show();
  QCOMPARE(window_->history()->rowCount(), 1);
  QCOMPARE(window_->history()->runs().front().id, std::string("good-run"));
  QCOMPARE(int(window_->load_warnings().size()), 2);
  QTRY_VERIFY(window_->log_panel()->text().contains("broken.json"));
  QVERIFY(window_->log_panel()->text().contains("foreign.json"));
}

// Two Compares of one configuration at different times: each run stays measured against the
// baseline it was compared with, and every place that names a comparison - the time chart's
// headline, the accuracy chart's "(baseline ...)", the card, the history's vs-baseline cell,
// the breakdown's baseline bar - reads that same baseline.
void TestWorkbench::two_runs_against_two_baselines_agree_everywhere() {
  QTemporaryDir home;
  const RunStore store(fs::path(home.path().toStdString()));
  RunRecord b1 = made_run("b1", "cpu:1", 1, 128, "2026-01-01T10:00:00Z"), r1 = made_run("r1", "cpu:2", 2, 128, "2026-01-01T10:01:00Z");
  RunRecord b2 = made_run("b2", "cpu:1", 1, 128, "2026-01-01T11:00:00Z"), r2 = made_run("r2", "cpu:2", 2, 128, "2026-01-01T11:01:00Z");
  b1.epochs[0].time_s = 3.0, b1.epochs[0].val_acc = 0.751;
  b2.epochs[0].time_s = 4.0, b2.epochs[0].val_acc = 0.897;
  r1.epochs[0].time_s = r2.epochs[0].time_s = 2.0;
  for (const RunRecord* r : {&b1, &r1, &b2, &r2}) store.save(*r);
  store.save_book({{{baseline_key(b2.config), "b2"}}, {{"r1", "b1"}, {"r2", "b2"}}});
  HistoryModel h(store);
  h.reload();
  const std::vector<ShownRun> runs = shown_runs(nullptr, {"r1", "r2"}, h);
  QCOMPARE(runs.size(), std::size_t(4));   // the two runs, then both baselines
  const ShownRun& primary = runs.front();
  QCOMPARE(QString::fromStdString(primary.record.id), QString("r1"));
  QCOMPARE(QString::fromStdString(primary.baseline_id), QString("b1"));
  QCOMPARE(QString::fromStdString(runs[1].baseline_id), QString("b2"));
  QVERIFY(runs[2].baseline && runs[3].baseline);   // b1 is drawn as a baseline, though b2 is its key's now
  QCOMPARE(primary.vs_baseline->speedup, 1.5);      // 3 s -> 2 s, not 4 s -> 2 s
  const QString time_title = build_chart(ChartKind::EpochTime, runs, {}).title;
  QVERIFY2(time_title.contains("3.00 s → 2.00 s") && time_title.contains("1.50×"), qPrintable(time_title));
  const QString acc_title = build_chart(ChartKind::Accuracy, runs, {}).title;
  QVERIFY2(acc_title.contains("(baseline 75.1 %)"), qPrintable(acc_title));
  const QString card = comparison_summary_html(runs);
  QVERIFY2(card.contains("(3.00 s → 2.00 s, 1.50×)") && card.contains("(baseline 75.10 %)") &&
               !card.contains("89.70"),
           qPrintable(card));
  auto speedup_cell = [&](const char* id) {
    return h.data(h.index(h.row_of(id), HistoryModel::Speedup), Qt::DisplayRole).toString();
  };
  QVERIFY2(speedup_cell("r1").startsWith("1.50×") && speedup_cell("r1").endsWith(format_date(b1.config.start_time).mid(11)),
           qPrintable(speedup_cell("r1")));
  QVERIFY2(speedup_cell("r2").startsWith("2.00×") && speedup_cell("r2").endsWith(format_date(b2.config.start_time).mid(11)),
           qPrintable(speedup_cell("r2")));
  QVERIFY(h.is_baseline(b2) && !h.is_baseline(b1));   // a new run would be compared with b2
  // The user pins b1: r2 is measured against it from now on, everywhere.
  QVERIFY(h.pin_baseline("b1"));
  QVERIFY2(speedup_cell("r2").startsWith("1.50×"), qPrintable(speedup_cell("r2")));
  const std::vector<ShownRun> after = shown_runs(nullptr, {"r2"}, h);
  QCOMPARE(QString::fromStdString(after.front().baseline_id), QString("b1"));
}

// The model works out every baseline once per change; it must choose as find_baseline() does,
// through adds, pins, a newer run, a failed run and removals.
void TestWorkbench::history_baselines_match_find_baseline() {
  QTemporaryDir home;
  HistoryModel h(RunStore(fs::path(home.path().toStdString())));
  h.reload();
  auto agree = [&h] {
    for (const auto& r : h.runs()) {
      const RunRecord* expected = find_baseline(h.runs(), h.book(), r.config);
      if (h.baseline_for(r.config) != expected) return false;
      if (h.is_baseline(r) != (expected && expected->id == r.id)) return false;
      const QString speedup = h.data(h.index(h.row_of(r.id), HistoryModel::Speedup), Qt::DisplayRole).toString();
      if ((expected && expected->id == r.id) != (speedup == "baseline")) return false;
    }
    return true;
  };
  QVERIFY(h.add(made_run("a1", "cpu:1", 1, 64, "2026-01-01T00:00:00Z")));
  QVERIFY(h.add(made_run("m2", "cpu:2", 2, 64, "2026-01-01T00:01:00Z")));
  QVERIFY(h.add(made_run("b128", "cpu:1", 1, 128, "2026-01-01T00:02:00Z")));
  QVERIFY(agree());
  QCOMPARE(h.baseline_for(h.find("m2")->config)->id, std::string("a1"));
  QVERIFY(h.add(made_run("a2", "cpu:1", 1, 64, "2026-01-01T00:03:00Z")));   // newer: takes over
  QVERIFY(h.add(made_run("a3", "cpu:1", 1, 64, "2026-01-01T00:04:00Z", RunStatus::Failed)));   // never a baseline
  QVERIFY(agree());
  QCOMPARE(h.baseline_for(h.find("m2")->config)->id, std::string("a2"));
  QVERIFY(h.data(h.index(h.row_of("m2"), HistoryModel::Speedup), Qt::DisplayRole).toString().contains("×") ||
          h.data(h.index(h.row_of("m2"), HistoryModel::Speedup), Qt::DisplayRole).toString().contains("%"));
  QVERIFY(h.pin_baseline("a1"));   // the pin beats the newer run
  QVERIFY(agree());
  QCOMPARE(h.baseline_for(h.find("m2")->config)->id, std::string("a1"));
  h.remove({"a1"});                // pinned run gone: back to the latest
  QVERIFY(agree());
  QCOMPARE(h.baseline_for(h.find("m2")->config)->id, std::string("a2"));
  QVERIFY(h.rename("a2", "renamed"));
  h.remove({"a2"});
  QVERIFY(agree());
  QCOMPARE(h.baseline_for(h.find("m2")->config), nullptr);
  h.reload();                      // from disk: the same answers
  QVERIFY(agree());
}

void TestWorkbench::running_trace_is_thinned_evenly() {
  RunningTrace trace;
  constexpr int kPoints = 20000;   // an hour at the trainer's 50 ms reports would be 72,000
  for (int i = 0; i < kPoints; ++i) {
    trace.append(QPointF(i, -i));
    QVERIFY(trace.points().size() < RunningTrace::kMaxPoints);
  }
  const QList<QPointF>& p = trace.points();
  QVERIFY(p.size() >= RunningTrace::kMaxPoints / 4);
  // Evenly spaced, in order, and the newest point kept once the stride divides the count.
  const double step = p[1].x() - p[0].x();
  QVERIFY(step > 1);
  for (qsizetype i = 1; i < p.size(); ++i) QCOMPARE(p[i].x() - p[i - 1].x(), step);
  QVERIFY(p.back().x() > kPoints - 1 - step);
  QCOMPARE(p.back().y(), -p.back().x());
}

// The card calls the criteria "the classic task" only for the classic settings.
void TestWorkbench::classic_criteria_only_for_classic_settings() {
  auto shown = [](const RunRecord& r, bool baseline) {
    ShownRun s;
    s.record = r;
    s.label = QString::fromStdString(r.id);
    s.baseline = baseline;
    return s;
  };
  auto card = [&](RunRecord base, RunRecord run) {
    std::vector<ShownRun> runs{shown(run, false), shown(base, true)};
    runs[0].baseline_label = runs[1].label;
    runs[0].baseline_id = runs[1].record.id;
    runs[0].vs_baseline = compare_epoch_time(base, run);
    return comparison_summary_html(runs);
  };
  RunRecord base = made_run("base", "cpu:1", 1, 128, "2026-01-01T00:00:00Z");
  RunRecord run = made_run("multi", "cpu:2", 2, 128, "2026-01-01T00:01:00Z");
  for (RunRecord* r : {&base, &run}) {
    r->config.epochs = 5;
    r->config.train_size = 60000;
    r->config.val_size = 10000;
  }
  QVERIFY(classic_task_differences(run.config).empty());
  QString html = card(base, run);
  QVERIFY2(html.contains("<b>Classic task</b>") && html.contains("Time per epoch reduced by ≥ 40 %?"), qPrintable(html));
  QVERIFY(html.contains("Validation accuracy above 80 %?") && !html.contains("n/a"));
  // The verdict and what bounds it come before the details.
  QVERIFY(html.indexOf("time per epoch") < html.indexOf("Throughput"));

  for (RunRecord* r : {&base, &run}) {
    r->config.epochs = 1;
    r->config.train_size = 2048;
  }
  QCOMPARE(to_qstrings(classic_task_differences(run.config)), QStringList({"1 epoch", "2,048 training images"}));
  html = card(base, run);
  QVERIFY2(html.contains("Classic task: n/a for these settings (1 epoch, 2,048 training images)"), qPrintable(html));
  QVERIFY(!html.contains("Time per epoch reduced by") && !html.contains("\u2718"));   // no red "no" for a rehearsal
  QVERIFY(html.contains("time per epoch"));   // the measured change is still the headline
}

// Shutting down right after start: whether the worker picked up the queued run or the thread
// quit first, the plan ends exactly once and the controller is idle.
void TestWorkbench::shutdown_with_a_queued_run_ends_the_plan() {
  TrainConfig c;
  c.data_dir = data_dir_.toStdString();
  c.devices = cpu_replicas(2);
  c.epochs = 500;
  c.batch = 64;
  c.limit_train = kTrain;
  for (int attempt = 0; attempt < 5; ++attempt) {
    RunController controller;
    QSignalSpy finished(&controller, &RunController::plan_finished);
    controller.start(make_plan(PlanRequest{PlanKind::Compare, c, 1, {}, {}}));
    QVERIFY(controller.busy());
    controller.shutdown();
    QVERIFY(!controller.busy());
    QCOMPARE(finished.count(), 1);
    QCOMPARE(finished.front().at(1).toBool(), false);   // not ok
    QCOMPARE(finished.front().at(2).toBool(), true);    // stopped
  }
}

// A run file copied or edited by hand: the file name, not the id inside, says which file
// Delete removes (an id with a slash used to throw out of the Delete button's slot).
void TestWorkbench::hand_copied_run_file_is_its_own_run() {
  window_.reset();
  QTemporaryDir home;
  const QByteArray saved = qgetenv("MIRRORBENCH_HOME");
  qputenv("MIRRORBENCH_HOME", home.path().toUtf8());
  const fs::path runs = fs::path(home.path().toStdString()) / "runs";
  fs::create_directories(runs);
  RunRecord r;
  r.config.devices = parse_devices("cpu:1");
  r.config.start_time = "2026-01-01T00:00:00Z";
  r.id = "original";
  write_run_json(r, runs / "original.json");
  fs::copy_file(runs / "original.json", runs / "copy.json");
  r.id = "../escape";
  write_run_json(r, runs / "odd.json");

  window_ = std::make_unique<MainWindow>();
  HistoryModel* h = window_->history();
  qputenv("MIRRORBENCH_HOME", saved);
  QCOMPARE(h->rowCount(), 3);
  QVERIFY(h->find("copy") && h->find("odd") && h->find("original"));
  h->remove({"copy", "odd"});
  QVERIFY(fs::exists(runs / "original.json"));
  QVERIFY(!fs::exists(runs / "copy.json"));
  QVERIFY(!fs::exists(runs / "odd.json"));
  window_.reset();
}

void TestWorkbench::invalid_batch_is_explained_in_place() {
  RunSetupPanel* p = window_->setup_panel();
  auto* replicas = p->findChild<QSpinBox*>("cpu_replicas");
  if (replicas->maximum() < 2) QSKIP("needs two CPU replicas");
  fill(1, 2);
  auto* preset = p->findChild<QComboBox*>("batch_preset");
  preset->setCurrentIndex(preset->findData(0));   // Custom
  p->findChild<QSpinBox*>("batch_custom")->setValue(1);
  auto* run = window_->findChild<QPushButton*>("run_button");
  auto* message = p->findChild<QLabel*>("setup_message");
  QVERIFY(!run->isEnabled());
  QVERIFY(!message->isHidden());
  QVERIFY2(message->text().contains("smaller than the 2 replicas"), qPrintable(message->text()));
  // "per replica" makes the same number valid: global batch = 1 x 2.
  QTest::mouseClick(p->findChild<QWidget*>("batch_per_replica"), Qt::LeftButton);
  QVERIFY(run->isEnabled());
  QVERIFY(!message->text().contains("smaller than the 2 replicas"));
  // A folder without any data set it reads is explained too.
  p->set_recent_data_dirs({home_.path()});
  auto* data = p->findChild<QComboBox*>("data_combo");
  data->setCurrentIndex(data->findData(QDir::cleanPath(home_.path())));
  QVERIFY(!run->isEnabled());
  QVERIFY(message->text().contains("holds no data set mirrorbench reads"));
  // The worker's message about the same folder does not repeat it.
  p->show_error("Cannot open the training images in that folder");
  QCOMPARE(message->text().count("holds no data set mirrorbench reads"), 1);
  QVERIFY(!message->text().contains("Cannot open the training images"));
}

// Other data than IDX in the data group (issue 28): an .npz and a CIFAR-10 folder are read by
// their headers, their shape said, and a model of another input refused in red naming both.
void TestWorkbench::data_picker_reads_other_formats() {
  auto* p = window_->findChild<RunSetupPanel*>();
  QVERIFY(p);
  const QString npz = QString(MB_TEST_DATA_DIR) + "/numpy/tiny_rgb.npz";
  p->set_recent_data_dirs({npz});
  auto* data = p->findChild<QComboBox*>("data_combo");
  data->setCurrentIndex(data->findData(QDir::cleanPath(npz)));
  auto* status = p->findChild<QLabel*>("data_status");
  auto* message = p->findChild<QLabel*>("setup_message");
  // The reference CNN reads 28x28x1; the archive holds 4x3x3 images.
  QVERIFY2(status->text().contains("4x3x3") && status->text().contains("NumPy .npz"), qPrintable(status->text()));
  QVERIFY2(message->text().contains("4x3x3"), qPrintable(message->text()));
  QVERIFY(!window_->findChild<QPushButton*>("run_button")->isEnabled());
  // A folder of images in Keras's layout (two of test_image_data's 12x10 colour JPEGs): its
  // format, shape and class count from the first header and the folders.
  const QString pictures = QDir(home_.path()).filePath("pictures");
  for (const char* to : {"train/cat", "train/dog", "test/cat"}) {
    QVERIFY(QDir().mkpath(pictures + "/" + to));
    QVERIFY(QFile::copy(QString(MB_TEST_DATA_DIR) + "/images/colour.jpg", pictures + "/" + to + "/1.jpg"));
  }
  p->set_recent_data_dirs({npz, pictures});
  data->setCurrentIndex(data->findData(QDir::cleanPath(pictures)));
  QVERIFY2(status->text().contains("10x12x3") && status->text().contains("PNG/JPEG image folders"),
           qPrintable(status->text()));
  QVERIFY(!window_->findChild<QPushButton*>("run_button")->isEnabled());
  data->setCurrentIndex(0);   // back to Fashion-MNIST
}

void TestWorkbench::log_panel_filters_by_level() {
  LogPanel* log = window_->log_panel();
  spdlog::info("an info line for the filter test");
  spdlog::warn("a warning line for the filter test");
  QTRY_VERIFY(log->text().contains("a warning line"));   // records arrive through a queued signal
  QVERIFY(log->text().contains("an info line"));
  log->set_level(int(spdlog::level::warn));
  QVERIFY(!log->text().contains("an info line"));
  QVERIFY(log->text().contains("a warning line"));
  log->set_level(int(spdlog::level::info));
  QVERIFY(log->text().contains("an info line"));
  // A stored level the filter does not offer is clamped to one it does.
  auto* filter = log->findChild<QComboBox*>("log_level");
  log->set_level(int(spdlog::level::off));
  QCOMPARE(log->level(), int(spdlog::level::err));
  QCOMPARE(filter->currentData().toInt(), int(spdlog::level::err));
  log->set_level(int(spdlog::level::trace));
  QCOMPARE(log->level(), int(spdlog::level::debug));
  QCOMPARE(filter->currentData().toInt(), int(spdlog::level::debug));
  log->set_level(int(spdlog::level::info));
}

void TestWorkbench::device_list_offers_gpus_and_explains_their_absence() {
  // No GPU: a plain sentence says why, and only CPU replicas are offered.
  DeviceInventory none;
  none.cpu_cores = 4;
  none.cpu_name = "Test CPU";
  none.gpu_note = "no NVIDIA driver found";
  RunSetupPanel cpu_only(none);
  QCOMPARE(cpu_only.findChild<QListWidget*>("device_list")->count(), 1);
  QVERIFY(cpu_only.findChild<QLabel*>("device_note")->text().contains("no NVIDIA driver found"));
  QCOMPARE(cpu_only.findChild<QSpinBox*>("cpu_replicas")->maximum(), 4);

  // Two GPUs: listed with name, memory and compute capability; CPU and GPU never mix.
  DeviceInventory two = none;
  two.gpus = {GpuInfo{0, "NVIDIA H200", 141ll << 30, 9, 0}, GpuInfo{1, "NVIDIA H200", 141ll << 30, 9, 0}};
  two.gpu_note.clear();
  RunSetupPanel panel(two);
  auto* list = panel.findChild<QListWidget*>("device_list");
  QCOMPARE(list->count(), 3);
  QVERIFY(list->item(1)->text().contains("NVIDIA H200"));
  QVERIFY(list->item(1)->text().contains("141 GiB"));
  QVERIFY(list->item(1)->text().contains("9.0"));
  list->item(1)->setCheckState(Qt::Checked);
  QCOMPARE(list->item(0)->checkState(), Qt::Unchecked);   // checking a GPU unchecks the CPU
  list->item(2)->setCheckState(Qt::Checked);
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cuda:0,cuda:1"));
  QCOMPARE(QString::fromStdString(format_devices(panel.single_device())), QString("cuda:0"));
  QVERIFY(panel.findChild<QPushButton*>("compare_button")->toolTip().contains("cuda:0"));
  panel.findChild<QSpinBox*>("replicas_per_gpu")->setValue(2);
  QCOMPARE(panel.replicas(), 4);
  QVERIFY(panel.advice().join(" ").contains("simulated"));
  // A saved configuration comes back as it was.
  TrainConfig c = panel.config();
  c.devices = parse_devices("cuda:1");
  panel.set_config(c);
  QCOMPARE(list->item(1)->checkState(), Qt::Unchecked);
  QCOMPARE(list->item(2)->checkState(), Qt::Checked);
  QCOMPARE(QString::fromStdString(format_devices(panel.config().devices)), QString("cuda:1"));
  QCOMPARE(QString::fromStdString(format_devices(panel.all_devices())), QString("cuda:0,cuda:1"));
}

// The What-if group's remedy: each entry sets its scenario fields (and only those), a
// combination from a command line shows as it is, and the demonstration needs a remedy.
void TestWorkbench::remedy_picker_carries_each_remedy() {
  RunSetupPanel panel(DeviceInventory{});
  auto* remedy = panel.findChild<QComboBox*>("what_if_remedy");
  auto* demo = panel.findChild<QPushButton*>("bare_vs_remedy_button");
  QVERIFY(remedy && demo);
  QVERIFY(!demo->isEnabled());
  QCOMPARE(panel.config().scenario, Scenario{});
  const int bf16 = remedy->findText("bf16 all-reduce");
  QVERIFY(bf16 > 0);
  remedy->setCurrentIndex(bf16);
  QVERIFY(panel.config().scenario.allreduce_dtype == WireDtype::Bf16);
  QCOMPARE(panel.config().scenario.accumulate, 1);
  QVERIFY(demo->isEnabled());
  remedy->setCurrentIndex(remedy->findText("accumulate 8 batches"));
  QVERIFY(panel.config().scenario.allreduce_dtype == WireDtype::Fp32);
  QCOMPARE(panel.config().scenario.accumulate, 8);
  remedy->setCurrentIndex(remedy->findText("overlap, 25 MB buckets"));   // DDP's default
  QCOMPARE(panel.config().scenario.bucket_mb, 25.0);
  QCOMPARE(panel.config().scenario.accumulate, 1);
  TrainConfig both = panel.config();
  both.scenario.accumulate = 4;
  both.scenario.allreduce_dtype = WireDtype::Fp16;
  both.scenario.bucket_mb = 0;
  panel.set_config(both);
  QCOMPARE(remedy->currentText(), QString("accumulate 4 batches, fp16 all-reduce"));
  QCOMPARE(panel.config().scenario, both.scenario);
  both.scenario = both.scenario.bare();
  panel.set_config(both);
  QCOMPARE(remedy->currentIndex(), 0);
  QVERIFY(!demo->isEnabled());
}

void TestWorkbench::rename_delete_and_pin_persist() {
  fill(1, 1);
  const RunRecord r = click_and_wait("run_button");
  QCOMPARE(r.status, RunStatus::Completed);
  HistoryModel* h = window_->history();
  const int row = h->row_of(r.id);
  QVERIFY(h->setData(h->index(row, HistoryModel::Name), "my classroom run", Qt::EditRole));
  QCOMPARE(read_run_json(h->store().file_for(r.id)).name, std::string("my classroom run"));
  QVERIFY(h->pin_baseline(r.id));
  QVERIFY(h->is_baseline(*h->find(r.id)));

  window_.reset();   // everything above must survive a restart
  window_ = std::make_unique<MainWindow>();
  h = window_->history();
  QVERIFY(h->find(r.id));
  QCOMPARE(h->find(r.id)->name, std::string("my classroom run"));
  QVERIFY(h->is_baseline(*h->find(r.id)));
  h->remove({r.id});
  QVERIFY(!h->find(r.id));
  QVERIFY(!fs::exists(h->store().file_for(r.id)));
}

void TestWorkbench::settings_are_remembered() {
  fill(7, 1, 256);
  window_->setup_panel()->findChild<QCheckBox*>("scale_lr")->setChecked(true);
  window_->chart_panel()->findChild<QCheckBox*>("show_train")->setChecked(false);
  window_->resize(1250, 780);
  window_->close();
  window_.reset();
  window_ = std::make_unique<MainWindow>();
  const TrainConfig c = window_->setup_panel()->config();
  QCOMPARE(c.epochs, 7);
  QCOMPARE(c.batch, int64_t(256));
  QVERIFY(c.scale_lr);
  QCOMPARE(QString::fromStdString(c.data_dir), data_dir_);
  QCOMPARE(c.limit_train, int64_t(kTrain));
  QVERIFY(!window_->chart_panel()->options().show_train);
  QCOMPARE(window_->size(), QSize(1250, 780));
  window_->chart_panel()->findChild<QCheckBox*>("show_train")->setChecked(true);
}

// The Reference experiment's preset shows in the fields while it runs and the user's own come
// back after it; a comparison brings the Training tab to the front; a what-if model and the
// scenario are not remembered (a class never inherits yesterday's demonstration).
void TestWorkbench::presets_restore_and_compare_shows_the_training_tab() {
  fill(2, 2);
  auto* epochs = window_->findChild<QSpinBox*>("epochs");
  auto* limit = window_->findChild<QSpinBox*>("limit_train");
  limit->setValue(300);
  window_->view_tabs()->setCurrentIndex(2);   // the Sweep tab, as after a sweep
  QSignalSpy done(window_.get(), &MainWindow::plan_done);
  QTest::mouseClick(window_->findChild<QPushButton*>("reference_button"), Qt::LeftButton);
  QCOMPARE(window_->view_tabs()->currentWidget(), static_cast<QWidget*>(window_->chart_panel()));
  QCOMPARE(epochs->value(), 5);        // the preset, shown while it runs
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(epochs->value(), 2);        // and the user's fields after it
  QCOMPARE(limit->value(), 300);
  // What the next launch remembers is the user's setup, never the preset's, a what-if model or
  // the scenario.
  TrainConfig what_if = window_->setup_panel()->config();
  what_if.model = reference_family(4096);
  what_if.scenario.straggler = {1, 3.0};
  window_->setup_panel()->set_config(what_if);
  window_->close();
  window_.reset();
  window_ = std::make_unique<MainWindow>();
  const TrainConfig again = window_->setup_panel()->config();
  QCOMPARE(again.epochs, 2);
  QVERIFY(again.model.is_reference() && again.scenario == Scenario{});
}

// Every export says where it wrote the file in the status bar, and the next save dialog opens
// in that folder, across launches.
void TestWorkbench::exports_confirm_and_remember_their_folder() {
  QTemporaryDir out;
  const QString file = out.filePath("charts.png");
  QTimer::singleShot(0, [&] {
    auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
    if (!dialog) return;
    dialog->selectFile(file);
    QMetaObject::invokeMethod(dialog, "accept");   // a slot: protected to call, public to invoke
  });
  QCOMPARE(ask_export_file(window_.get(), "Export", "mirrorbench-charts.png", "PNG images (*.png)"), file);
  QString opened;
  QTimer::singleShot(0, [&] {
    auto* dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
    if (!dialog) return;
    opened = dialog->directory().absolutePath();
    dialog->reject();
  });
  QCOMPARE(ask_export_file(window_.get(), "Export", "mirrorbench-runs.csv", "CSV (*.csv)"), QString());
  QCOMPARE(opened, QDir(out.path()).absolutePath());
  confirm_export(window_.get(), file);
  QVERIFY2(window_->statusBar()->currentMessage().contains(file), qPrintable(window_->statusBar()->currentMessage()));
}

// The Model group: its note follows the text as it is typed (or says inline why it is no model,
// and Run waits), presets fill the text, a Keras file fills it with what the file was read as,
// and a file that cannot be trained is refused in a dialog naming its layer, the text kept.
void TestWorkbench::the_model_group_reads_texts_presets_and_keras_files() {
  auto* text = window_->findChild<QLineEdit*>("model_text");
  auto* note = window_->findChild<QLabel*>("model_note");
  auto* preset = window_->findChild<QComboBox*>("model_preset");
  auto* picker = window_->findChild<ModelPicker*>("model_group");
  auto* run = window_->findChild<QPushButton*>("run_button");
  QVERIFY(text && note && preset && picker && run);
  QCOMPARE(text->text(), QString("reference"));
  QVERIFY2(note->text().contains("121,930 parameters") && note->text().contains("0.49 MB per all-reduce"),
           qPrintable(note->text()));
  QVERIFY(run->isEnabled());

  text->selectAll();
  QTest::keyClicks(text, "28x28x1:conv8-pool-dense");   // no units yet
  QVERIFY(!picker->model());
  QVERIFY2(note->text().contains("dense"), qPrintable(note->text()));
  QVERIFY(!run->isEnabled());
  QTest::keyClicks(text, "10");
  QVERIFY(picker->model());
  // 3*3*1*8+8 = 80, 13*13*8*10+10 = 13,530
  QVERIFY2(note->text().contains("13,610 parameters") && note->text().contains("Not the reference CNN"),
           qPrintable(note->text()));
  QCOMPARE(preset->currentIndex(), preset->count() - 1);   // "your own"
  QVERIFY(run->isEnabled());

  const int mlp = preset->findText("mlp");
  QVERIFY(mlp >= 0);
  preset->setCurrentIndex(mlp);
  emit preset->activated(mlp);
  QCOMPARE(text->text(), QString("mlp"));
  QVERIFY2(note->text().contains("242,762 parameters"), qPrintable(note->text()));

  // The text round-trips: every preset and a layer text come back as the same model.
  for (const ModelPreset& p : model_presets()) {
    const ModelSpec m = model_from_text(p.name);
    picker->set(m);
    QVERIFY2(picker->model() && *picker->model() == m, p.name.data());
  }
  const ModelSpec custom = model_from_text("32x32x3:conv8@5s_nobias-avgpool@s-drop12.5-gap-dense7");
  picker->set(custom);
  QVERIFY(picker->model() && *picker->model() == custom);

  const QString keras = QString(MB_TEST_DATA_DIR) + "/keras/";
  QVERIFY(picker->open_keras_file(keras + "keras3_cifar_config.json"));
  QCOMPARE(text->text().toStdString(), model_text(model_from_text("cnn-cifar")));
  QCOMPARE(preset->currentText(), QString("cnn-cifar"));
  QVERIFY2(note->text().contains("From keras3_cifar_config.json") && note->text().contains("1,250,858"),
           qPrintable(note->text()));

  QString refusal;
  QTimer::singleShot(0, [&] {
    auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
    if (!box) return;
    refusal = box->text();
    box->accept();
  });
  QVERIFY(!picker->open_keras_file(keras + "refuse_batchnorm.json"));
  QVERIFY2(refusal.contains("model.layers[1] 'batch_normalization' (BatchNormalization)"), qPrintable(refusal));
  QCOMPARE(text->text().toStdString(), model_text(model_from_text("cnn-cifar")));
}

void TestWorkbench::scripted_mode_exit_codes() {
  const QString app = test::gui_program();
  if (!QFile::exists(app)) QSKIP("the mirrorbench executable is not built");
  window_.reset();
  QTemporaryDir out;
  auto run = [&](const QStringList& args) { return test::run_gui(app, args, out.path(), kRunTimeoutMs); };
  const QString png = out.filePath("slide.png"), csv = out.filePath("runs.csv");
  QCOMPARE(run({"--run", "--devices", "cpu:1", "--epochs", "1", "--data", data_dir_, "--limit-train", "256",
                "--limit-val", "128", "--export-png", png, "--export-size", "800x500", "--export-csv", csv, "--quit"}),
           0);
  QCOMPARE(QImage(png).size(), QSize(800, 500));
  QVERIFY(QFile::exists(csv));
  QCOMPARE(json_files(fs::path(out.path().toStdString()) / "runs"), 1);
  // Bad command line: 2. A run the trainer refuses (batch < replicas): 1.
  QCOMPARE(run({"--run", "--epochs", "0", "--quit"}), kExitUsage);
  QCOMPARE(run({"--run", "--devices", "cpu:2", "--batch", "1", "--data", data_dir_, "--quit"}), kExitRunFailed);
}

QTEST_MAIN(TestWorkbench)
#include "test_workbench.moc"

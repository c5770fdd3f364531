// The workbench's Sweep (ui/sweep, its hooks in the window and scripted mode) on the
// offscreen platform: the configurations a sweep plans from the tab's settings, the table and
// charts on a synthetic history with known answers (time to the target, the best named, the
// core's verdict word for word), the exports against the core's CSV/JSON, a real sweep from
// the window and one in scripted mode writing its files.
#include <QLabel>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/main_window.h"
#include "record_fixtures.h"
#include "app/script_options.h"
#include "charts/laid_out_text.h"
#include "common/format.h"
#include "experiment/sweep.h"
#include "history/history_model.h"
#include "run/run_controller.h"
#include "setup/run_setup_panel.h"
#include "sweep/sweep_charts.h"
#include "sweep/sweep_export.h"
#include "sweep/sweep_panel.h"
#include "sweep/sweep_table_model.h"
#include "gui_process.h"
#include "test_support.h"
#include "util/system_info.h"

namespace fs = std::filesystem;
using namespace mb;
using nlohmann::json;

namespace {

constexpr int kTrain = 256, kVal = 128;
constexpr int kRunTimeoutMs = 120000;

// A record with one epoch per (time, val_acc) pair, for the point it belongs to.
RunRecord history(const SweepPoint& p, const std::string& id, std::initializer_list<std::pair<double, double>> epochs) {
  RunRecord r;
  r.id = id;
  r.config.devices = parse_devices("cpu:2");
  r.config.replicas = 2;
  r.config.global_batch = p.global_batch;
  r.config.learning_rate = p.lr;
  r.config.dataset = "synthetic";
  r.config.start_time = "2026-12-01T10:00:00Z";
  r.epochs = test::epoch_history(epochs);
  return r;
}

// Batches 64, 128, 256 (reference 128), target 80 %: five configurations with known answers.
//   64 fixed:    7.0 s to 80 % (epoch 3)      128 fixed: 3.5 s (epoch 2)     256 fixed: never
//   64 scaled:   7.0 s (epoch 3, exactly 80 %) 256 scaled: 2.5 s (epoch 2): the best
struct Synthetic {
  SweepOptions options;
  std::vector<SweepPoint> points;
  std::vector<RunRecord> records;
};
Synthetic synthetic_sweep() {
  Synthetic s;
  s.options.base.devices = parse_devices("cpu:2");
  s.options.base.epochs = 3;
  s.options.base.lr = 1e-3;
  s.options.batches = {64, 128, 256};
  s.options.target_val_acc = 0.80;
  s.points = sweep_points(s.options);
  const std::vector<std::vector<std::pair<double, double>>> epochs = {
      {{3.0, 0.70}, {2.0, 0.78}, {2.0, 0.82}},   // 64 fixed
      {{2.0, 0.75}, {1.5, 0.81}, {1.5, 0.83}},   // 128 fixed
      {{1.5, 0.60}, {1.0, 0.70}, {1.0, 0.75}},   // 256 fixed
      {{3.0, 0.72}, {2.0, 0.79}, {2.0, 0.80}},   // 64 scaled
      {{1.5, 0.78}, {1.0, 0.82}, {1.0, 0.84}},   // 256 scaled
  };
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    RunRecord r = history(s.points[i], "run-" + std::to_string(i), {});
    int e = 0;
    for (auto [t, acc] : epochs[i]) {
      EpochMetrics m;
      m.epoch = ++e;
      m.time_s = t;
      m.val_acc = acc;
      r.epochs.push_back(m);
    }
    s.records.push_back(r);
  }
  return s;
}

// Feeds a panel the sweep as the window would: run by run, epoch by epoch.
void play(SweepPanel& panel, const Synthetic& s, int runs) {
  panel.start(s.options);
  for (int i = 0; i < runs; ++i) {
    panel.run_started(i, s.records[std::size_t(i)].config);
    for (const auto& m : s.records[std::size_t(i)].epochs) panel.epoch(m);
    panel.run_finished(i, s.records[std::size_t(i)]);
  }
}

QBarSet* bar_set(QChart* chart, bool scaled) {
  for (QAbstractSeries* series : chart->series())
    if (auto* bars = qobject_cast<QBarSeries*>(series)) return bars->barSets().value(scaled ? 1 : 0);
  return nullptr;
}

int dark_pixels(const QImage& image) {
  int dark = 0;
  for (int y = 0; y < image.height(); y += 4)
    for (int x = 0; x < image.width(); x += 4) dark += qGray(image.pixel(x, y)) < 128;
  return dark;
}

QString read_text(const QString& file) {
  QFile f(file);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

}  // namespace

class TestSweepView : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();

  void batch_lists_are_read_as_typed_data();
  void batch_lists_are_read_as_typed();
  void the_plan_has_every_configuration();
  void table_and_verdict_are_the_cores();
  void the_run_in_progress_shows_live();
  void charts_hold_the_table_values();
  void refilled_chart_draws_like_a_fresh_one();
  void every_label_reads_whole_data();
  void every_label_reads_whole();
  void stopped_sweep_keeps_what_finished();
  void exports_are_the_cores_files();
  void sweep_from_the_window_trains_every_configuration();
  void scripted_sweep_writes_its_files();
  void model_and_link_sweeps_show_speedups();
  void scripted_link_sweep_writes_its_files();
  void remedy_sweep_shows_speedup_and_accuracy();

 private:
  QTemporaryDir home_;
  QTemporaryDir data_;
  QString data_dir_;
};

void TestSweepView::initTestCase() {
  QVERIFY(home_.isValid() && data_.isValid());
  qputenv("MIRRORBENCH_HOME", home_.path().toUtf8());
  data_dir_ = QDir::cleanPath(data_.path() + "/tiny-idx");
  test::write_synthetic_idx_dir(data_dir_.toStdString(), kTrain, kVal);
}

void TestSweepView::batch_lists_are_read_as_typed_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("batches");   // as parsed, or empty
  QTest::addColumn<QString>("problem");   // a word of the message, or empty
  QTest::newRow("commas") << "64,128,256" << "64, 128, 256" << "";
  QTest::newRow("spaces and semicolons") << " 32  64; 1024 " << "32, 64, 1024" << "";
  QTest::newRow("empty") << "  " << "" << "at least one";
  QTest::newRow("a word") << "64, big" << "" << "not a batch size";
  QTest::newRow("zero") << "0, 64" << "" << "outside";
  QTest::newRow("too large") << "70000" << "" << "outside";
  QTest::newRow("twice") << "64, 128, 64" << "" << "twice";
}

void TestSweepView::batch_lists_are_read_as_typed() {
  QFETCH(QString, text);
  QFETCH(QString, batches);
  QFETCH(QString, problem);
  QString why;
  const auto parsed = parse_batches(text, &why);
  QCOMPARE(batches_text(parsed), batches);
  QVERIFY2(problem.isEmpty() ? why.isEmpty() : why.contains(problem), qPrintable(why));

  // The panel says the same, and the run setup's Sweep button follows it in the window.
  MainWindow window;
  window.sweep_panel()->findChild<QLineEdit*>("sweep_batches")->setText(text);
  QCOMPARE(window.sweep_panel()->settings_problem(), why);
  auto* sweep = window.findChild<QPushButton*>("sweep_button");
  QVERIFY(sweep);
  if (!why.isEmpty()) {
    QVERIFY(!sweep->isEnabled());
    QVERIFY(sweep->toolTip().contains(why));
  }
}

void TestSweepView::the_plan_has_every_configuration() {
  SweepPanel panel;
  panel.findChild<QLineEdit*>("sweep_batches")->setText("64, 128, 256");
  panel.findChild<QDoubleSpinBox*>("sweep_target")->setValue(80);
  TrainConfig base;
  base.devices = parse_devices("cpu:2");
  base.epochs = 3;
  base.lr = 2e-3;
  base.batch = 999;             // the run setup's own batch: the sweep sets its own
  base.per_replica_batch = true;
  base.scale_lr = true;
  base.step_delay_s = 1;
  const SweepOptions o = panel.options(base);
  QCOMPARE(o.target_val_acc, 0.80);
  QCOMPARE(o.reference_batch, int64_t(128));
  const auto plan = make_sweep_plan(o);
  // Each batch with the lr as set, then scaled where scaling changes it (not at 128).
  const std::vector<std::pair<int64_t, double>> expected = {{64, 2e-3}, {128, 2e-3}, {256, 2e-3}, {64, 1e-3}, {256, 4e-3}};
  QCOMPARE(plan.size(), expected.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const TrainConfig& c = plan[i].config;
    QCOMPARE(c.batch, expected[i].first);
    QCOMPARE(c.lr, expected[i].second);
    QVERIFY(!c.per_replica_batch && !c.scale_lr);
    QCOMPARE(QString::fromStdString(format_devices(c.devices)), QString("cpu:2"));
    QCOMPARE(c.epochs, 3);
  }
  // The panel shows one waiting row per configuration before anything trains.
  panel.start(o);
  QCOMPARE(panel.table_model()->rowCount(), int(expected.size()));
  for (int r = 0; r < panel.table_model()->rowCount(); ++r) {
    QCOMPARE(panel.table_model()->text(r, SweepTableModel::Batch), QString::number(expected[std::size_t(r)].first));
    QCOMPARE(panel.table_model()->text(r, SweepTableModel::State), QString("waiting"));
  }
  QCOMPARE(panel.table_model()->text(3, SweepTableModel::Scaling), QString("scaled ×0.5"));
  QCOMPARE(panel.table_model()->text(0, SweepTableModel::Scaling), QString("fixed"));
  QCOMPARE(panel.table_model()->headerData(SweepTableModel::TimeToTarget, Qt::Horizontal, Qt::DisplayRole).toString(),
           QString("Time to 80.0 %"));
}

void TestSweepView::table_and_verdict_are_the_cores() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, int(s.records.size()));
  panel.finished(false);
  const SweepSummary core = summarize_sweep(s.points, s.records, s.options.target_val_acc);
  QCOMPARE(core.best, 4);   // the synthetic history's answer: batch 256 with scaled lr
  const SweepTableModel* t = panel.table_model();
  QCOMPARE(t->rowCount(), 5);
  const char* ttt[] = {"7.00 s", "3.50 s", "not reached", "7.00 s", "2.50 s"};
  const char* epochs_to[] = {"3", "2", "–", "3", "2"};
  for (int r = 0; r < 5; ++r) {
    QCOMPARE(t->text(r, SweepTableModel::TimeToTarget), QString(ttt[r]));
    QCOMPARE(t->text(r, SweepTableModel::EpochsToTarget), QString(epochs_to[r]));
    const SweepResult& c = core.results[std::size_t(r)];
    QCOMPARE(t->text(r, SweepTableModel::EpochTime), format_seconds(c.epoch_s));
    QCOMPARE(t->text(r, SweepTableModel::ValAcc), format_percent(c.val_acc, 2));
    QCOMPARE(t->text(r, SweepTableModel::State).contains("best"), r == core.best);
    QCOMPARE(t->data(t->index(r, 0), Qt::FontRole).value<QFont>().bold(), r == core.best);
  }
  QCOMPARE(t->text(1, SweepTableModel::EpochTime), QString("1.50 s"));   // median of epochs 2..3
  // The headline is the core's verdict, word for word, and names the best configuration.
  QCOMPARE(panel.headline(), QString::fromStdString(core.verdict));
  QVERIFY2(panel.headline().contains("batch 256, lr scaled to 0.002"), qPrintable(panel.headline()));
  QVERIFY(panel.progress().status_text().contains("All 5"));
  // Good news in green: a configuration reached the target.
  QVERIFY(core.reached);
  QVERIFY(panel.findChild<QLabel*>("sweep_verdict")->styleSheet().contains("#1b5e20"));

  // Nobody reaches the target: the most accurate is named instead, as the core says.
  Synthetic none = s;
  none.options.target_val_acc = 0.99;
  SweepPanel missed;
  play(missed, none, int(none.records.size()));
  missed.finished(false);
  const SweepSummary core_missed = summarize_sweep(none.points, none.records, 0.99);
  QCOMPARE(missed.headline(), QString::fromStdString(core_missed.verdict));
  QVERIFY(missed.headline().contains("no configuration reached"));
  // ... and a target nobody reached is not headlined in green (issue 31).
  QVERIFY(!core_missed.reached);
  QVERIFY2(missed.findChild<QLabel*>("sweep_verdict")->styleSheet().contains("#b71c1c"),
           qPrintable(missed.findChild<QLabel*>("sweep_verdict")->styleSheet()));
  for (int r = 0; r < 5; ++r) QCOMPARE(missed.table_model()->text(r, SweepTableModel::TimeToTarget), QString("not reached"));
}

void TestSweepView::the_run_in_progress_shows_live() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, 1);
  // The second configuration has trained two of its three epochs.
  panel.run_started(1, s.records[1].config);
  panel.epoch(s.records[1].epochs[0]);
  panel.epoch(s.records[1].epochs[1]);
  const SweepTableModel* t = panel.table_model();
  QCOMPARE(t->text(1, SweepTableModel::State), QString("running · epoch 3/3"));
  QCOMPARE(t->text(1, SweepTableModel::TimeToTarget), QString("3.50 s"));   // reached in its 2nd epoch already
  QCOMPARE(t->text(1, SweepTableModel::ValAcc), QString("81.00 %"));
  QCOMPARE(t->text(2, SweepTableModel::State), QString("waiting"));
  QCOMPARE(t->text(2, SweepTableModel::TimeToTarget), QString("–"));
  // The verdict so far comes from the finished configuration only.
  const SweepSummary so_far = summarize_sweep(s.points, {s.records[0]}, s.options.target_val_acc);
  QCOMPARE(panel.progress().summary().verdict, so_far.verdict);
  QVERIFY(panel.headline().startsWith("So far: "));
  QVERIFY(panel.headline().contains(QString::fromStdString(so_far.verdict)));
  QVERIFY(panel.progress().status_text().contains("1 of 5"));
}

// The charts are refilled after every epoch: what they draw then must be one chart, not the
// earlier fills' axes under the latest.
void TestSweepView::refilled_chart_draws_like_a_fresh_one() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, int(s.records.size()));
  panel.finished(false);
  const SweepBars bars = sweep_bars(SweepChart::EpochTime, panel.progress());
  SweepBars other = bars;
  other.y_max = 4 * bars.y_max;
  other.categories = {"1", "2"};
  QImage images[2];
  for (int fills : {1, 3}) {
    QChartView view(new QChart);
    view.resize(420, 300);
    view.show();
    for (int i = 0; i < fills - 1; ++i) {
      fill_sweep_chart(view.chart(), i % 2 ? bars : other);
      QCoreApplication::processEvents();   // laid out and drawn, as between two epochs
    }
    fill_sweep_chart(view.chart(), bars);
    QCoreApplication::processEvents();
    QCOMPARE(int(view.chart()->axes().size()), 2);
    images[fills > 1] = view.grab().toImage();
  }
  QCOMPARE(images[1], images[0]);
}

void TestSweepView::every_label_reads_whole_data() {
  QTest::addColumn<QSize>("size");   // the Sweep tab
  QTest::addColumn<int>("angle");    // the batch sizes' labels: lying, or upright when too narrow for them
  QTest::newRow("1366x768") << QSize(830, 520) << -90;
  QTest::newRow("1920x1080") << QSize(1300, 780) << 0;
}

// The default sweep, 64 to 1024: the issue saw "1…" for 1024, "lower is bet…" and "lr scaled
// with the bat…". Every label of the three charts whole on the tab and in the PNG.
void TestSweepView::every_label_reads_whole() {
  QFETCH(QSize, size);
  QFETCH(int, angle);
  Synthetic s;
  s.options.base.devices = parse_devices("cpu:2");
  s.options.base.epochs = 1;
  s.options.batches = {64, 128, 256, 512, 1024};
  s.points = sweep_points(s.options);
  for (std::size_t i = 0; i < s.points.size(); ++i)
    s.records.push_back(history(s.points[i], "run-" + std::to_string(i), {{1.0 + 0.1 * double(i), 0.8}}));
  SweepPanel panel;
  panel.resize(size);
  play(panel, s, int(s.records.size()));
  panel.finished(false);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  for (int i = 0; i < 5; ++i) QTest::qWait(10);   // the charts fit their axes to their size
  for (SweepChart kind : sweep_charts(SweepAxis::Batch)) {
    QChart* chart = panel.chart(kind);
    const std::vector<LaidOutText> texts = laid_out_texts(chart);
    QStringList cut, all;
    for (const LaidOutText& t : texts) (t.cut ? cut : all) << t.text;
    QVERIFY2(cut.isEmpty(), qPrintable(sweep_chart_name(kind) + ": " + cut.join("; ")));
    QVERIFY2(all.contains("1024"), qPrintable(all.join("; ")));
    QVERIFY(all.contains("lr scaled"));
    auto* x = qobject_cast<QBarCategoryAxis*>(chart->axes(Qt::Horizontal).front());
    QVERIFY(x);
    QCOMPARE(x->labelsAngle(), angle);
  }
  TextRecorder recorder;
  QCOMPARE(panel.render(QSize(1600, 1000)).size(), QSize(1600, 1000));
  QVERIFY(!recorder.texts().empty());
  QStringList cut;
  for (const LaidOutText& t : recorder.cut()) cut << t.text;
  QVERIFY2(cut.isEmpty(), qPrintable(cut.join("; ")));
}

void TestSweepView::charts_hold_the_table_values() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, int(s.records.size()));
  panel.finished(false);
  const SweepSummary core = summarize_sweep(s.points, s.records, s.options.target_val_acc);
  // Categories 64, 128, 256; the scaled set's 128 is the fixed run (the rule changes nothing).
  const std::vector<int> fixed_row = {0, 1, 2}, scaled_row = {3, 1, 4};
  for (SweepChart kind : sweep_charts(SweepAxis::Batch)) {
    QChart* chart = panel.chart(kind);
    QBarSet* fixed = bar_set(chart, false);
    QBarSet* scaled = bar_set(chart, true);
    QVERIFY(fixed && scaled);
    QCOMPARE(fixed->count(), 3);
    auto value = [&](int row) {
      const SweepResult& r = core.results[std::size_t(row)];
      switch (kind) {
        case SweepChart::EpochTime: return r.epoch_s;
        case SweepChart::Accuracy: return 100 * r.val_acc;
        case SweepChart::TimeToTarget: return r.time_to_target_s.value_or(0.0);
        case SweepChart::SpeedUp: break;   // not a batch sweep's chart
      }
      return -1.0;
    };
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(fixed->at(i), value(fixed_row[std::size_t(i)]));
      QCOMPARE(scaled->at(i), value(scaled_row[std::size_t(i)]));
    }
    // The best configuration's bar, and only that one, is picked out.
    QCOMPARE(scaled->selectedBars(), QList<int>{2});
    QVERIFY(fixed->selectedBars().isEmpty());
  }
  QCOMPARE(bar_set(panel.chart(SweepChart::TimeToTarget), false)->at(2), 0.0);   // not reached: no bar
  QVERIFY(panel.chart(SweepChart::TimeToTarget)->title().contains("80.0 %"));
}

void TestSweepView::stopped_sweep_keeps_what_finished() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, 2);
  panel.run_started(2, s.records[2].config);
  panel.epoch(s.records[2].epochs[0]);
  panel.finished(true);
  QVERIFY(panel.progress().status_text().contains("Stopped after 2 of 5"));
  QCOMPARE(int(panel.progress().summary().results.size()), 2);
  QCOMPARE(panel.table_model()->text(2, SweepTableModel::State), QString("waiting"));
  const SweepSummary core = summarize_sweep(s.points, {s.records[0], s.records[1]}, s.options.target_val_acc);
  QCOMPARE(panel.headline(), QString::fromStdString(core.verdict));
}

void TestSweepView::exports_are_the_cores_files() {
  const Synthetic s = synthetic_sweep();
  SweepPanel panel;
  play(panel, s, int(s.records.size()));
  panel.finished(false);
  const SweepSummary core = summarize_sweep(s.points, s.records, s.options.target_val_acc);
  QTemporaryDir out;
  QString error;
  QVERIFY2(save_sweep_csv(panel.progress(), out.filePath("sweep.csv"), &error), qPrintable(error));
  QVERIFY2(save_sweep_json(panel.progress(), out.filePath("sweep.json"), &error), qPrintable(error));
  QCOMPARE(read_text(out.filePath("sweep.csv")), QString::fromStdString(sweep_csv(core)));
  QVERIFY(json::parse(read_text(out.filePath("sweep.json")).toStdString()) == to_json(core));
  // Under a file (not a folder): the writer cannot create the folder it needs.
  QVERIFY(!save_sweep_csv(panel.progress(), out.filePath("sweep.json/inside.csv"), &error));
  QVERIFY(error.contains("sweep.json/inside.csv"));

  for (QSize size : {QSize(1600, 1000), QSize(1920, 1080), QSize(800, 500)}) {
    const QImage image = panel.render(size);
    QCOMPARE(image.size(), size);
    QVERIFY(dark_pixels(image) > 50);
  }
  // The slide's table is the on-screen table.
  const QString html = sweep_table_html(panel.progress());
  for (int r = 0; r < panel.table_model()->rowCount(); ++r)
    QVERIFY(html.contains(panel.table_model()->text(r, SweepTableModel::TimeToTarget).toHtmlEscaped()));
  QVERIFY(html.contains("★ best"));
}

void TestSweepView::sweep_from_the_window_trains_every_configuration() {
  MainWindow window;
  window.show();
  RunSetupPanel* p = window.setup_panel();
  TrainConfig c = p->config();
  c.data_dir = data_dir_.toStdString();
  c.devices = parse_devices("cpu:1");
  c.epochs = 2;
  c.limit_train = kTrain;
  c.limit_val = kVal;
  c.seed = 5;
  c.step_delay_s = 1;   // teaching pace ticked: a sweep still runs at full speed
  p->set_recent_data_dirs({data_dir_});
  p->set_config(c);
  QVERIFY2(p->problems().isEmpty(), qPrintable(p->problems().join("; ")));
  window.sweep_panel()->findChild<QLineEdit*>("sweep_batches")->setText("32, 64");
  window.sweep_panel()->findChild<QDoubleSpinBox*>("sweep_target")->setValue(30);
  const std::size_t runs_before = window.history()->runs().size();

  QSignalSpy done(&window, &MainWindow::plan_done);
  QSignalSpy started(window.controller(), &RunController::run_started);
  auto* button = window.findChild<QPushButton*>("sweep_button");
  QVERIFY(button->isEnabled());
  QTest::mouseClick(button, Qt::LeftButton);
  QVERIFY(window.controller()->busy());
  QCOMPARE(window.view_tabs()->currentWidget(), static_cast<QWidget*>(window.sweep_panel()));
  QCOMPARE(window.controller()->current_run()->config.step_delay_s, 0.0);
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), true);
  // 32 and 64 with the lr as set, then both scaled (neither is the reference batch 128).
  const std::vector<std::pair<int64_t, double>> expected = {{32, 1e-3}, {64, 1e-3}, {32, 0.25e-3}, {64, 0.5e-3}};
  QCOMPARE(started.size(), int(expected.size()));
  const SweepProgress& progress = window.sweep_panel()->progress();
  QCOMPARE(progress.records().size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const RunRecord& r = progress.records()[i];
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(r.config.global_batch, expected[i].first);
    QCOMPARE(r.config.learning_rate, expected[i].second);
    QCOMPARE(int(r.epochs.size()), 2);
    QCOMPARE(r.config.step_delay_s, 0.0);
    QVERIFY(window.history()->find(r.id));   // every configuration is in the history
  }
  QCOMPARE(window.history()->runs().size(), runs_before + expected.size());
  const SweepSummary core = summarize_sweep(progress.points(), progress.records(), 0.30);
  QCOMPARE(window.sweep_panel()->headline(), QString::fromStdString(core.verdict));
  QVERIFY(window.sweep_panel()->progress().status_text().startsWith("All"));
}

void TestSweepView::scripted_sweep_writes_its_files() {
  const QString app = test::gui_program();
  if (!QFile::exists(app)) QSKIP("the mirrorbench executable is not built");
  QTemporaryDir out;
  auto run = [&](const QStringList& args) { return test::run_gui(app, args, out.path(), kRunTimeoutMs); };
  const QString devices = cpu_core_count() >= 2 ? "cpu:2" : "cpu:1";
  const QString png = out.filePath("sweep.png"), csv = out.filePath("sweep.csv"), js = out.filePath("sweep.json");
  QCOMPARE(run({"--sweep", "--devices", devices, "--batches", "32,64", "--epochs", "1", "--target", "0.2", "--data",
                data_dir_, "--limit-train", QString::number(kTrain), "--limit-val", QString::number(kVal),
                "--export-png", png, "--export-size", "1280x800", "--export-csv", csv, "--export-json", js, "--quit"}),
           kExitOk);
  QCOMPARE(QImage(png).size(), QSize(1280, 800));
  QVERIFY(dark_pixels(QImage(png)) > 50);

  // The JSON is the core's summary of the saved records: every configuration, each with its
  // run in the history, and the best named.
  const json j = json::parse(read_text(js).toStdString());
  QCOMPARE(j.at("configurations").size(), std::size_t(4));   // 32, 64 fixed; 32, 64 scaled
  QCOMPARE(j.at("target_val_acc").get<double>(), 0.2);
  std::vector<RunRecord> records;
  std::vector<SweepPoint> points;
  for (const auto& c : j.at("configurations")) {
    const fs::path file = fs::path(out.path().toStdString()) / "runs" / (c.at("run_id").get<std::string>() + ".json");
    QVERIFY2(fs::exists(file), file.c_str());
    records.push_back(read_run_json(file));
    points.push_back({c.at("global_batch").get<int64_t>(), c.at("scale_lr").get<bool>(), c.at("lr").get<double>()});
    points.back().replicas = c.at("replicas").get<int>();
    QCOMPARE(records.back().config.global_batch, points.back().global_batch);
    QCOMPARE(QString::fromStdString(format_devices(records.back().config.devices)), devices);
  }
  const SweepSummary core = summarize_sweep(points, records, 0.2);
  QVERIFY(j == to_json(core));
  QCOMPARE(read_text(csv), QString::fromStdString(sweep_csv(core)));
  QVERIFY(!j.at("verdict").get<std::string>().empty());

  // The sweep's options belong to --sweep, and are checked.
  QCOMPARE(run({"--run", "--batches", "64", "--quit"}), kExitUsage);
  QCOMPARE(run({"--sweep", "--batches", "64,x", "--quit"}), kExitUsage);
  QCOMPARE(run({"--sweep", "--target", "1.5", "--quit"}), kExitUsage);
  QCOMPARE(run({"--run", "--export-json", js, "--quit"}), kExitUsage);
}

// A model sweep fed to the panel: the axis' columns only, one bar set per replica count, the
// speed-up chart with the core's values, the verdict the core's; then the axis and its list
// as the settings hold them.
void TestSweepView::model_and_link_sweeps_show_speedups() {
  SweepPanel panel;
  panel.findChild<QComboBox*>("sweep_axis")->setCurrentIndex(1);
  QCOMPARE(panel.axis(), SweepAxis::Model);
  auto* models = panel.findChild<QLineEdit*>("sweep_models");
  QVERIFY(models->isVisibleTo(&panel) && !panel.findChild<QLineEdit*>("sweep_batches")->isVisibleTo(&panel));
  models->setText("reference, dense:0");
  QVERIFY2(panel.settings_problem().contains("dense:0"), qPrintable(panel.settings_problem()));
  models->setText("reference, dense:4096");
  QVERIFY(panel.settings_problem().isEmpty());
  TrainConfig base;
  base.devices = parse_devices("cpu:2");
  base.epochs = 1;
  const SweepOptions o = panel.options(base);
  QCOMPARE(o.axis, SweepAxis::Model);
  QVERIFY(o.models == std::vector<ModelSpec>({ModelSpec{}, reference_family(4096)}));
  const std::vector<SweepPoint> points = sweep_points(o);
  const double times[] = {4.0, 2.5, 8.0, 10.0};   // speed-ups 1.6 and 0.8
  std::vector<RunRecord> records;
  panel.start(o);
  for (int i = 0; i < 4; ++i) {
    RunRecord r = history(points[std::size_t(i)], "m" + std::to_string(i), {{times[i], 0.7}});
    panel.run_started(i, r.config);
    panel.run_finished(i, r);
    records.push_back(r);
  }
  panel.finished(false);
  const SweepSummary core = summarize_sweep(points, records, o.target_val_acc, SweepAxis::Model);
  QCOMPARE(panel.headline(), QString::fromStdString(core.verdict));
  QVERIFY(panel.headline().contains("slower than one"));
  QVERIFY(core.reached);   // the reference model's 1.6x: more replicas helped one model
  QVERIFY(!panel.table_view()->isColumnHidden(SweepTableModel::SpeedUp));
  QVERIFY(panel.table_view()->isColumnHidden(SweepTableModel::Scaling));
  QCOMPARE(panel.table_model()->text(3, SweepTableModel::SpeedUp), QString("0.80×"));
  QCOMPARE(panel.table_model()->text(3, SweepTableModel::Model), QString("dense:4096"));
  QVERIFY(panel.chart(SweepChart::TimeToTarget) == nullptr);
  QChart* speed = panel.chart(SweepChart::SpeedUp);
  QVERIFY(speed);
  QCOMPARE(bar_set(speed, false)->label(), QString("2 replicas"));   // one replica has no speed-up bar
  QCOMPARE(bar_set(speed, false)->at(0), 1.6);
  QCOMPARE(bar_set(speed, false)->at(1), 0.8);
  QChart* time = panel.chart(SweepChart::EpochTime);
  QCOMPARE(bar_set(time, false)->label(), QString("1 replica"));
  QCOMPARE(bar_set(time, true)->at(1), 10.0);
  QVERIFY(sweep_table_html(panel.progress()).contains("Speed-up"));
  QVERIFY(!sweep_table_html(panel.progress()).contains("Learning rate rule"));
  QVERIFY(dark_pixels(panel.render(QSize(1280, 800))) > 50);

  // The link axis: its own list, checked as typed.
  panel.findChild<QComboBox*>("sweep_axis")->setCurrentIndex(2);
  panel.findChild<QLineEdit*>("sweep_links")->setText("off, 1:fifty");
  QVERIFY2(panel.settings_problem().contains("fifty"), qPrintable(panel.settings_problem()));
  panel.findChild<QLineEdit*>("sweep_links")->setText("off, 1:50");
  const SweepSettings saved = panel.settings();
  QCOMPARE(*saved.axis, SweepAxis::Link);
  QVERIFY(saved.links == std::vector<SimulatedLink>({{0, 0}, {1, 50}}));
  SweepPanel other;
  other.set_settings(saved);
  QCOMPARE(other.axis(), SweepAxis::Link);
  QCOMPARE(other.findChild<QLineEdit*>("sweep_links")->text(), QString("off, 1:50"));
}

// The scripted link sweep end to end: one replica, then two over the real exchange and over a
// simulated 1 Gbit/s link; the JSON names the axis and the links, the records the links.
void TestSweepView::scripted_link_sweep_writes_its_files() {
  const QString app = test::gui_program();
  if (!QFile::exists(app)) QSKIP("the mirrorbench executable is not built");
  QTemporaryDir out;
  const QString js = out.filePath("links.json");
  QCOMPARE(test::run_gui(app,
                         {"--sweep", "--devices", "cpu:2", "--links", "off,1:50", "--epochs", "1", "--data", data_dir_,
                          "--limit-train", QString::number(kTrain), "--limit-val", QString::number(kVal),
                          "--export-json", js, "--quit"},
                         out.path(), kRunTimeoutMs),
           kExitOk);
  const json j = json::parse(read_text(js).toStdString());
  QCOMPARE(j.at("axis").get<std::string>(), std::string("link"));
  const auto& c = j.at("configurations");
  QCOMPARE(c.size(), std::size_t(3));
  QCOMPARE(c.at(0).at("replicas").get<int>(), 1);
  QCOMPARE(c.at(2).at("simulated_link_gbit").get<double>(), 1.0);
  QVERIFY(c.at(2).at("speedup").is_number());
  const RunRecord slow = read_run_json(fs::path(out.path().toStdString()) / "runs" /
                                       (c.at(2).at("run_id").get<std::string>() + ".json"));
  QCOMPARE(slow.config.scenario.link.gbit, 1.0);
  QCOMPARE(slow.config.replicas, 2);
  QCOMPARE(test::run_gui(app, {"--sweep", "--models", "reference", "--links", "off", "--quit"}, out.path(),
                         kRunTimeoutMs),
           kExitUsage);
  QCOMPARE(test::run_gui(app, {"--sweep", "--remedies", "bf16", "--links", "off", "--quit"}, out.path(), kRunTimeoutMs),
           kExitUsage);
  QCOMPARE(test::run_gui(app, {"--sweep", "--remedies", "gzip", "--quit"}, out.path(), kRunTimeoutMs), kExitUsage);
}

// The remedy axis, "what to do about it": one replica, two bare and two with each remedy over
// the run setup's link. The table names each remedy, the charts put their speed-ups and the
// accuracy each costs side by side, and the list comes back through the settings.
void TestSweepView::remedy_sweep_shows_speedup_and_accuracy() {
  SweepPanel panel;
  auto* axis = panel.findChild<QComboBox*>("sweep_axis");
  axis->setCurrentIndex(axis->findData(int(SweepAxis::Remedy)));
  QCOMPARE(panel.axis(), SweepAxis::Remedy);
  auto* remedies = panel.findChild<QLineEdit*>("sweep_remedies");
  QVERIFY(remedies->isVisibleTo(&panel) && !panel.findChild<QLineEdit*>("sweep_links")->isVisibleTo(&panel));
  QCOMPARE(remedies->text(), QString("accumulate:8, bf16, bucket:25"));   // the core's defaults
  remedies->setText("accumulate:8, zip");
  QVERIFY2(panel.settings_problem().contains("zip"), qPrintable(panel.settings_problem()));
  remedies->setText("accumulate:8+bf16, fp16");
  QVERIFY(panel.settings_problem().isEmpty());
  TrainConfig base;
  base.devices = parse_devices("cpu:2");
  base.epochs = 1;
  base.scenario.link = {1, 50};
  const SweepOptions o = panel.options(base);
  QCOMPARE(o.axis, SweepAxis::Remedy);
  QCOMPARE(o.remedies.size(), std::size_t(2));
  QCOMPARE(o.remedies[0].accumulate, 8);
  QVERIFY(o.remedies[0].allreduce_dtype == WireDtype::Bf16 && o.remedies[1].allreduce_dtype == WireDtype::Fp16);
  const std::vector<SweepPoint> points = sweep_points(o);
  QCOMPARE(points.size(), std::size_t(4));   // one replica, two bare, two with each remedy
  // Bare two replicas are slower than one (0.4x); accumulation wins (1.33x) at 10 points of
  // accuracy; fp16 helps less (0.5x) at none.
  const std::pair<double, double> runs[] = {{4.0, 0.80}, {10.0, 0.80}, {3.0, 0.70}, {8.0, 0.80}};
  std::vector<RunRecord> records;
  panel.start(o);
  for (int i = 0; i < 4; ++i) {
    RunRecord r = history(points[std::size_t(i)], "r" + std::to_string(i), {runs[i]});
    panel.run_started(i, r.config);
    panel.run_finished(i, r);
    records.push_back(r);
  }
  panel.finished(false);
  const SweepSummary core = summarize_sweep(points, records, o.target_val_acc, SweepAxis::Remedy);
  QCOMPARE(panel.headline(), QString::fromStdString(core.verdict));
  QCOMPARE(core.best, 2);
  SweepTableModel* table = panel.table_model();
  for (int c : {SweepTableModel::Remedy, SweepTableModel::Link, SweepTableModel::SpeedUp, SweepTableModel::ValAcc})
    QVERIFY(!panel.table_view()->isColumnHidden(c));
  QVERIFY(panel.table_view()->isColumnHidden(SweepTableModel::Model));
  QCOMPARE(table->text(0, SweepTableModel::Remedy), QString("none (the base)"));
  QCOMPARE(table->text(1, SweepTableModel::Remedy), QString("bare"));
  QCOMPARE(table->text(2, SweepTableModel::Remedy), QString("accumulate 8, bf16 all-reduce"));
  QCOMPARE(table->text(2, SweepTableModel::SpeedUp), QString("1.33×"));
  QVERIFY(sweep_table_html(panel.progress()).contains("Remedy"));

  QChart* speed = panel.chart(SweepChart::SpeedUp);
  QVERIFY(speed);
  auto* categories = qobject_cast<QBarCategoryAxis*>(speed->axes(Qt::Horizontal).value(0));
  QVERIFY(categories);
  QCOMPARE(categories->categories(), QStringList({"bare", "acc 8+bf16", "fp16"}));
  QCOMPARE(bar_set(speed, false)->label(), QString("2 replicas"));
  QCOMPARE(bar_set(speed, false)->at(0), 0.4);
  QCOMPARE(bar_set(speed, false)->at(2), 0.5);
  QChart* accuracy = panel.chart(SweepChart::Accuracy);
  QVERIFY(accuracy);
  QCOMPARE(bar_set(accuracy, false)->label(), QString("1 replica"));   // the base stands in every group
  for (int c = 0; c < 3; ++c) QCOMPARE(bar_set(accuracy, false)->at(c), 80.0);
  QCOMPARE(bar_set(accuracy, true)->at(1), 70.0);
  QVERIFY(dark_pixels(panel.render(QSize(1280, 800))) > 50);

  const SweepSettings saved = panel.settings();
  QCOMPARE(*saved.axis, SweepAxis::Remedy);
  QVERIFY(saved.remedies == o.remedies);
  SweepPanel other;
  other.set_settings(saved);
  QCOMPARE(other.axis(), SweepAxis::Remedy);
  QCOMPARE(other.findChild<QLineEdit*>("sweep_remedies")->text(), QString("accumulate:8+bf16, fp16"));
}

QTEST_MAIN(TestSweepView)
#include "test_sweep_view.moc"

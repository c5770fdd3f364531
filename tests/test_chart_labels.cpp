// Legends and labels that never elide (issue 31): the legends name runs by what differs between
// them ("baseline", "2 replicas", "2 replicas · tf32"), one entry per run plus a key to the line
// styles, full names in tooltips and exports; the axes tick at round steps with every tick in
// range labelled; and every text the charts lay out - titles, axis titles, tick labels, legend
// entries, bar labels - is whole, on screen at the sizes a 1366x768 window gives the charts and
// in every exported PNG (charts/laid_out_text.h: Qt Charts writes "..." where it cuts a text and
// hides a tick label with no room; our own painters say what they cut). Synthetic records,
// offscreen, no training.
#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QFontInfo>
#include <QLineSeries>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>

#include <filesystem>

#include "charts/chart_content.h"
#include "charts/chart_legend.h"
#include "charts/chart_panel.h"
#include "charts/chart_render.h"
#include "charts/laid_out_text.h"
#include "common/format.h"
#include "export/exporter.h"
#include "history/history_model.h"
#include "insight/bar_chart_render.h"
#include "insight/breakdown.h"
#include "insight/insight_export.h"
#include "insight/insight_panel.h"
#include "test_support.h"

using namespace mb;

namespace {

PhaseTimes phases(double compute, double allreduce, double wait) {
  PhaseTimes t;
  t[phase::Forward] = compute / 3, t[phase::Backward] = compute * 2 / 3, t[phase::AllReduce] = allreduce,
  t[phase::Wait] = wait;
  return t;
}

// A finished run of `replicas` CPU replicas with `epochs` epochs, each with its breakdown.
RunRecord run(const std::string& id, int replicas, int epochs = 5, const std::string& start = "2026-12-01T10:00:00Z") {
  RunRecord r;
  r.id = id;
  r.config.devices = cpu_replicas(replicas);
  r.config.replicas = replicas;
  r.config.global_batch = 128;
  r.config.per_replica_batch = 128 / replicas;
  r.config.epochs = epochs;
  r.config.dataset = "fashion-mnist";
  r.config.train_size = 60000;
  r.config.val_size = 10000;
  r.config.start_time = start;
  for (int e = 1; e <= epochs; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.time_s = 3.0 / replicas + 0.05 * e;
    m.train_acc = 0.80 + 0.015 * e, m.val_acc = 0.84 + 0.01 * e;
    m.train_loss = 0.55 - 0.04 * e, m.val_loss = 0.45 - 0.03 * e;
    for (int k = 0; k < replicas; ++k) m.replica_times.push_back(phases(m.time_s * 0.8, 0.05, 0.02 * k));
    r.epochs.push_back(m);
  }
  return r;
}

std::vector<const RunRecord*> pointers(const std::vector<RunRecord>& records) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : records) out.push_back(&r);
  return out;
}

// Every run that is not a baseline compared with the first baseline.
std::vector<int> with_first_baseline(const std::vector<bool>& baseline) {
  const auto first = std::find(baseline.begin(), baseline.end(), true);
  std::vector<int> out;
  for (bool b : baseline) out.push_back(b || first == baseline.end() ? -1 : int(first - baseline.begin()));
  return out;
}

// The runs as the window shows them: labels from short_labels, runs coloured, baselines grey
// and last, each run compared with the first baseline.
std::vector<ShownRun> shown(const std::vector<RunRecord>& records, const std::vector<bool>& baseline) {
  const std::vector<QString> labels = short_labels(pointers(records), baseline, with_first_baseline(baseline));
  std::vector<ShownRun> out;
  int colour = 0, grey = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    ShownRun s;
    s.record = records[i];
    s.label = labels[i];
    s.baseline = baseline[i];
    s.colour = s.baseline ? baseline_colour(grey++) : run_colour(colour++);
    out.push_back(s);
  }
  for (ShownRun& s : out) {
    if (s.baseline) continue;
    for (const ShownRun& b : out)
      if (b.baseline) {
        s.baseline_label = b.label;
        s.vs_baseline = compare_epoch_time(b.record, s.record);
        break;
      }
  }
  std::stable_partition(out.begin(), out.end(), [](const ShownRun& s) { return !s.baseline; });
  return out;
}

// The hardest case: three runs overlaid, each with a long what-if name, and their
// baseline (a what-if model's runs have a baseline of the same model).
std::vector<ShownRun> three_runs_and_a_baseline() {
  std::vector<RunRecord> r = {run("a", 2), run("b", 2), run("c", 2), run("base", 1)};
  for (RunRecord& x : r) x.config.model = reference_family(4096);
  r[1].config.scenario.link = {1, 50};
  r[2].config.scenario.straggler = {1, 3};
  r[2].config.global_batch = 256;
  return shown(r, {false, false, false, true});
}

QString describe(const std::vector<LaidOutText>& texts) {
  QStringList out;
  for (const LaidOutText& t : texts) out << QStringLiteral("%1 '%2'").arg(t.where, t.text);
  return out.join(QStringLiteral("; "));
}

std::vector<LaidOutText> cut(const std::vector<LaidOutText>& texts) {
  std::vector<LaidOutText> out;
  for (const LaidOutText& t : texts)
    if (t.cut) out.push_back(t);
  return out;
}

bool has_text(const std::vector<LaidOutText>& texts, const QString& text) {
  return std::any_of(texts.begin(), texts.end(), [&](const LaidOutText& t) { return t.text == text; });
}

// Lets queued tick fitting and layout requests run, as the event loop does between refreshes.
void settle() {
  for (int i = 0; i < 5; ++i) {
    QCoreApplication::processEvents();
    QTest::qWait(10);
  }
}

}  // namespace

class TestChartLabels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void short_names_say_what_differs();
  void full_names_are_run_labels_kept_apart();
  void one_legend_entry_per_run_and_a_key();
  void baselines_are_drawn_over_the_runs();
  void ticks_are_round_and_every_one_labelled_data();
  void ticks_are_round_and_every_one_labelled();
  void bar_chart_ticks_are_round_and_every_one_labelled_data();
  void bar_chart_ticks_are_round_and_every_one_labelled();
  void legends_wrap_rather_than_cut();
  void screen_charts_keep_every_text_whole_data();
  void screen_charts_keep_every_text_whole();
  void exports_keep_every_text_whole_data();
  void exports_keep_every_text_whole();
};

void TestChartLabels::initTestCase() {
  // The sizes below are what a 1366x768 window gives the charts with Debian's font.
  QCOMPARE(QFontInfo(QApplication::font()).family(), QString("DejaVu Sans"));
}

void TestChartLabels::short_names_say_what_differs() {
  // A run and its baseline: "baseline" and what differs between them.
  const std::vector<RunRecord> pair = {run("a", 2), run("base", 1)};
  auto labels = short_labels(pointers(pair), {false, true}, {1, -1});
  QCOMPARE(labels[0], QString("2 replicas"));
  QCOMPARE(labels[1], QString("baseline"));

  // The example: a third run in tf32 says so; what all share is not repeated.
  std::vector<RunRecord> three = {run("a", 2), run("b", 2), run("base", 1)};
  for (RunRecord& r : three) r.config.model = reference_family(4096);
  three[1].config.precision = Precision::Tf32;
  labels = short_labels(pointers(three), {false, false, true}, {2, 2, -1});
  QCOMPARE(labels[0], QString("2 replicas"));
  QCOMPARE(labels[1], QString("2 replicas · tf32"));
  QCOMPARE(labels[2], QString("baseline"));

  // Two runs alike against their own baselines, and the two baselines, say which is which.
  std::vector<RunRecord> four = {run("a", 2), run("b", 2), run("base", 1), run("base2", 1)};
  four[1].config.global_batch = four[3].config.global_batch = 256;
  labels = short_labels(pointers(four), {false, false, true, true}, {2, 3, -1, -1});
  QCOMPARE(labels[0], QString("2 replicas · batch 128"));
  QCOMPARE(labels[1], QString("2 replicas · batch 256"));
  QCOMPARE(labels[2], QString("baseline · batch 128"));
  QCOMPARE(labels[3], QString("baseline · batch 256"));

  // Runs without a baseline on display are named by what tells them apart.
  const std::vector<RunRecord> apart = {run("a", 1), run("b", 2)};
  labels = short_labels(pointers(apart), {false, false}, {-1, -1});
  QCOMPARE(labels[0], QString("1 replica"));
  QCOMPARE(labels[1], QString("2 replicas"));

  // Runs alike in everything a user chooses are told apart by their start time.
  const std::vector<RunRecord> alike = {run("a", 2, 5, "2026-12-01T10:00:00Z"), run("b", 2, 5, "2026-12-01T10:05:00Z")};
  labels = short_labels(pointers(alike), {false, false}, {-1, -1});
  QVERIFY2(labels[0] != labels[1], qPrintable(labels[0]));
  QVERIFY(labels[0].startsWith("2 replicas · "));

  // A run alone is named by its replicas, and its what-ifs are always said.
  RunRecord slow = run("slow", 2);
  slow.config.scenario.straggler = {1, 3};
  slow.config.model = reference_family(4096);
  QCOMPARE(short_labels({&slow}, {false}, {-1}).front(), QString("2 replicas · dense:4096 · simulated straggler r1 \u00d73"));
  // The user's name wins.
  RunRecord named = run("named", 2);
  named.name = "lecture demo";
  QCOMPARE(short_labels({&named, &pair[1]}, {false, true}, {1, -1}).front(), QString("lecture demo"));
}

void TestChartLabels::full_names_are_run_labels_kept_apart() {
  const std::vector<RunRecord> pair = {run("a", 2), run("base", 1)};
  const auto full = full_labels(pointers(pair), {false, true});
  QCOMPARE(full[0], run_label(pair[0]));
  QCOMPARE(full[1], run_label(pair[1]) + " (baseline)");
  // Two runs whose default names are alike differ in what tells them apart.
  std::vector<RunRecord> lr = {run("a", 2), run("b", 2)};
  lr[1].config.learning_rate = 0.002;
  const auto apart = full_labels(pointers(lr), {false, false});
  QCOMPARE(apart[0], run_label(lr[0]) + " · lr 0.001");
  QCOMPARE(apart[1], run_label(lr[1]) + " · lr 0.002");
}

// Validation and training of a run share its colour: one entry per run, then a key to the
// line styles, instead of every run listed once per series.
void TestChartLabels::one_legend_entry_per_run_and_a_key() {
  const std::vector<ShownRun> runs = three_runs_and_a_baseline();
  ChartOptions options;
  const ChartContent acc = build_chart(ChartKind::Accuracy, runs, options);
  QCOMPARE(int(acc.legend.size()), 4 + 2);
  for (std::size_t i = 0; i < 4; ++i) {
    QCOMPARE(acc.legend[i].text, runs[i].label);
    QVERIFY(acc.legend[i].full.startsWith(run_label(runs[i].record)));
    // The entry draws as the run's validation series does.
    const QString id = QString::fromStdString(runs[i].record.id) + "/val_acc";
    const auto s = std::find_if(acc.series.begin(), acc.series.end(), [&](const SeriesSpec& x) { return x.id == id; });
    QVERIFY(s != acc.series.end());
    QCOMPARE(acc.legend[i].pen, s->pen);
    QVERIFY(s->name.startsWith(acc.legend[i].full));   // the tooltips name the run in full
  }
  QCOMPARE(acc.legend[3].text, QString("baseline"));
  QCOMPARE(acc.legend[3].pen.style(), Qt::DashLine);
  QCOMPARE(acc.legend[4].text, QString("validation"));
  QCOMPARE(acc.legend[5].text, QString("training"));
  QVERIFY(acc.legend[5].pen.widthF() < acc.legend[4].pen.widthF());
  // Without the training curves there is nothing to tell apart by style.
  options.show_train = false;
  QCOMPARE(int(build_chart(ChartKind::Accuracy, runs, options).legend.size()), 4);
  QCOMPARE(int(build_chart(ChartKind::EpochTime, runs, options).legend.size()), 4);
}

// The same seed gives the baseline the run's curves: drawn first, it vanished under them.
void TestChartLabels::baselines_are_drawn_over_the_runs() {
  const std::vector<ShownRun> runs = three_runs_and_a_baseline();
  const ChartContent c = build_chart(ChartKind::Loss, runs, ChartOptions{});
  std::size_t last_run = 0, first_baseline = c.series.size();
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    if (c.series[i].id.startsWith("base/")) first_baseline = std::min(first_baseline, i);
    else last_run = i;
  }
  QVERIFY(first_baseline < c.series.size());
  QVERIFY(first_baseline > last_run);
  // Thinner than the run's line, so the run shows between its dashes.
  QVERIFY(c.series[first_baseline].pen.widthF() < c.series[0].pen.widthF());
}

void TestChartLabels::ticks_are_round_and_every_one_labelled_data() {
  QTest::addColumn<int>("height");
  QTest::addColumn<bool>("finest");   // the content's step of 0.1 has room
  // The axis read 0.0, 0.1, 0.2, 0.3, 0.5: Qt Charts hid 0.4, having no room for it.
  QTest::newRow("tall") << 420 << true;
  QTest::newRow("a 1366x768 chart") << 240 << true;
  QTest::newRow("squeezed") << 170 << false;
}

// A chart of 0 to 0.5 s in steps of 0.1: as many round ticks as the height holds, every one
// of them labelled, none cut.
void TestChartLabels::ticks_are_round_and_every_one_labelled() {
  QFETCH(int, height);
  QFETCH(bool, finest);
  ChartContent c;
  c.title = "<b>Time per epoch</b>";
  c.x_title = "Epoch";
  c.y_title = "s";
  c.x_min = 0.5, c.x_max = 5.5, c.x_tick_anchor = 1, c.x_tick_interval = 1;
  c.y_min = 0, c.y_max = 0.5, c.y_tick_interval = 0.1, c.y_floor = 0;
  SeriesSpec s;
  s.id = "run/time";
  s.name = "run";
  s.pen = QPen(Qt::blue, 2);
  for (int e = 1; e <= 5; ++e) s.points.append(QPointF(e, 0.08 * e));
  c.series.push_back(s);
  c.legend = {{"2 replicas", {}, LegendItem::Sample::Line, s.pen, 8}};

  QChartView view(new QChart);
  init_chart(view.chart());
  view.resize(400, height);
  view.show();
  QVERIFY(QTest::qWaitForWindowExposed(&view));
  apply_content(view.chart(), c);
  settle();
  auto* y = qobject_cast<QValueAxis*>(view.chart()->axes(Qt::Vertical).front());
  const double interval = y->tickInterval();
  QCOMPARE(interval == 0.1, finest);
  QVERIFY(interval == 0.1 || interval == 0.2 || interval == 0.25 || interval == 0.5 || interval == 1);
  QCOMPARE(y->min(), 0.0);
  QVERIFY(y->max() >= 0.5 - 1e-9);
  const std::vector<LaidOutText> texts = laid_out_texts(view.chart());
  QVERIFY2(cut(texts).empty(), qPrintable(describe(cut(texts))));
  const int decimals = decimals_for(interval);
  for (int k = 0; k * interval <= y->max() + 1e-9; ++k) {
    const QString label = QString::number(k * interval, 'f', decimals);
    QVERIFY2(has_text(texts, label), qPrintable(label + " missing: " + describe(texts)));
  }
}

void TestChartLabels::bar_chart_ticks_are_round_and_every_one_labelled_data() {
  QTest::addColumn<int>("height");
  QTest::addColumn<bool>("finest");
  QTest::newRow("tall") << 420 << true;
  QTest::newRow("the smallest view") << 220 << false;
}

// The breakdown's own painter: the same promise.
void TestChartLabels::bar_chart_ticks_are_round_and_every_one_labelled() {
  QFETCH(int, height);
  QFETCH(bool, finest);
  const std::vector<RunRecord> r = {run("a", 2, 3), run("base", 1, 3)};
  BarChartContent c = build_breakdown(shown(r, {false, true}), nullptr);
  c.value_max = 0.5, c.value_tick = 0.1, c.value_decimals = 1;   // the axis
  const QRectF area(0, 0, 420, height);
  const BarChartLayout l = layout_bar_chart(c, area);
  const double interval = l.value_tick;
  QCOMPARE(interval == 0.1, finest);
  QVERIFY(interval == 0.1 || interval == 0.2 || interval == 0.25 || interval == 0.5 || interval == 1);
  const std::vector<LaidOutText> texts = laid_out_texts(c, area);
  QVERIFY2(cut(texts).empty(), qPrintable(describe(cut(texts))));
  for (int k = 0; k * interval <= l.value_max + 1e-9; ++k) {
    const QString label = QString::number(k * interval, 'f', decimals_for(interval));
    QVERIFY2(has_text(texts, label), qPrintable(label + " missing: " + describe(texts)));
  }
}

// Entries take as many rows as they need, and one wider than a whole row wraps its words.
void TestChartLabels::legends_wrap_rather_than_cut() {
  QFont font;
  font.setPixelSize(11);
  const QFontMetricsF fm(font);
  std::vector<LegendItem> items;
  for (const char* name : {"2 replicas · dense:4096 · simulated link 1 Gbit/s", "baseline", "validation", "training"})
    items.push_back({name, QStringLiteral("%1, in full").arg(name), LegendItem::Sample::Line, QPen(Qt::black), 0});
  for (double width : {900.0, 300.0, 120.0}) {
    const LegendLayout l = layout_legend(items, LegendNames::Short, font, width);
    QCOMPARE(l.entries.size(), items.size());
    double bottom = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const auto& p = l.entries[i];
      QCOMPARE(p.words, items[i].text);
      QVERIFY2(p.words_width <= p.text.width() + 0.5, qPrintable(QString("%1 at %2").arg(p.words).arg(width)));
      QVERIFY(p.sample.left() >= -0.5 && p.text.right() <= width + 0.5);
      bottom = std::max(bottom, p.text.bottom());
    }
    QVERIFY(l.height >= bottom - 0.5);
    if (width >= 900) QCOMPARE(l.height, fm.height());   // one row where they fit
    else QVERIFY(l.height > fm.height());
  }
  // An export's legend says the full names.
  QCOMPARE(layout_legend(items, LegendNames::Full, font, 900).entries[1].words, QString("baseline, in full"));
}

void TestChartLabels::screen_charts_keep_every_text_whole_data() {
  QTest::addColumn<QSize>("size");   // the charts' tab
  QTest::newRow("1366x768") << QSize(830, 490);
  QTest::newRow("1920x1080") << QSize(1300, 750);
}

// The training charts and Where the time goes, at the sizes a window gives them, with three
// runs overlaid on their baseline.
void TestChartLabels::screen_charts_keep_every_text_whole() {
  QFETCH(QSize, size);
  const std::vector<ShownRun> runs = three_runs_and_a_baseline();
  ChartPanel panel;
  panel.resize(size);
  panel.set_runs(runs);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  panel.refresh_now();
  settle();
  for (ChartKind kind : kAllCharts) {
    const std::vector<LaidOutText> texts = laid_out_texts(panel.chart(kind));
    QVERIFY2(cut(texts).empty(), qPrintable(chart_name(kind) + ": " + describe(cut(texts))));
    for (const ShownRun& r : runs) QVERIFY2(has_text(texts, r.label), qPrintable(chart_name(kind) + " lacks " + r.label));
  }

  QTemporaryDir tmp;
  HistoryModel history{RunStore(std::filesystem::path(tmp.path().toStdString()))};
  InsightPanel insight(&history);
  insight.resize(size);
  insight.set_runs(runs, ChartOptions{});
  insight.show();
  QVERIFY(QTest::qWaitForWindowExposed(&insight));
  insight.refresh_now();
  settle();
  for (const char* name : {"insight_epoch_time", "insight_prediction"}) {
    auto* view = insight.findChild<QChartView*>(name);
    QVERIFY(view);
    const std::vector<LaidOutText> texts = laid_out_texts(view->chart());
    QVERIFY2(cut(texts).empty(), qPrintable(QString(name) + ": " + describe(cut(texts))));
  }
  for (const char* name : {"insight_breakdown", "insight_timeline"}) {
    auto* view = insight.findChild<QWidget*>(name);
    QVERIFY(view);
    const InsightContents c = insight.contents();
    const BarChartContent& content = QString(name) == "insight_breakdown" ? c.breakdown : c.timeline;
    const std::vector<LaidOutText> texts = laid_out_texts(content, QRectF(view->rect()));
    QVERIFY2(cut(texts).empty(), qPrintable(QString(name) + ": " + describe(cut(texts))));
  }
}

void TestChartLabels::exports_keep_every_text_whole_data() {
  QTest::addColumn<int>("chart");   // -1: all charts as one page
  QTest::addColumn<QSize>("size");
  QTest::newRow("all 1600x1000") << -1 << QSize(1600, 1000);
  QTest::newRow("all 1920x1080") << -1 << QSize(1920, 1080);
  QTest::newRow("all 1366x768") << -1 << QSize(1366, 768);
  QTest::newRow("all 640x400") << -1 << QSize(640, 400);
  QTest::newRow("time 1600x1000") << int(ChartKind::EpochTime) << QSize(1600, 1000);
  QTest::newRow("accuracy 800x600") << int(ChartKind::Accuracy) << QSize(800, 600);
  QTest::newRow("loss 300x1200") << int(ChartKind::Loss) << QSize(300, 1200);
}

// What Export PNG writes, and Where the time goes' export at the same size: every text whole,
// the legends with the runs' full names.
void TestChartLabels::exports_keep_every_text_whole() {
  QFETCH(int, chart);
  QFETCH(QSize, size);
  const std::vector<ShownRun> runs = three_runs_and_a_baseline();
  const auto which = chart < 0 ? std::nullopt : std::optional<ChartKind>(static_cast<ChartKind>(chart));
  {
    TextRecorder recorder;
    const QImage image = render_charts_image(runs, ChartOptions{}, which, size);
    QCOMPARE(image.size(), size);
    QVERIFY2(recorder.cut().empty(), qPrintable(describe(recorder.cut())));
    for (const ShownRun& r : runs) {
      const bool named = std::any_of(recorder.texts().begin(), recorder.texts().end(), [&](const LaidOutText& t) {
        return t.where == "legend" && t.text.startsWith(run_label(r.record));
      });
      QVERIFY2(named, qPrintable("no legend entry names " + run_label(r.record)));
    }
  }
  if (chart >= 0) return;
  QTemporaryDir tmp;
  HistoryModel history{RunStore(std::filesystem::path(tmp.path().toStdString()))};
  InsightPanel insight(&history);
  insight.set_runs(runs, ChartOptions{});
  TextRecorder recorder;
  const QImage image = insight.render_image(size, std::nullopt);
  QCOMPARE(image.size(), size);
  QVERIFY(!recorder.texts().empty());
  QVERIFY2(recorder.cut().empty(), qPrintable(describe(recorder.cut())));
}

QTEST_MAIN(TestChartLabels)
#include "test_chart_labels.moc"

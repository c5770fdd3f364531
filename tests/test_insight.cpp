// "Where the time goes" in the workbench: the breakdown's bars are the records' replica_times,
// the timeline's segments are the step reports' (and a kept trace's) phases, the prediction
// chart's points are the model's and the history's, the card states predicted vs measured,
// the simulated straggler reaches the TrainConfig and every label, and a run's Chrome trace is
// kept beside its record and exported as a valid trace. Offscreen; synthetic records and
// calibrations where no training is needed, tiny real runs where it is.
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLineSeries>
#include <QProcess>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QSpinBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QLabel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <filesystem>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "app/main_window.h"
#include "model/model_text.h"
#include "app/script_options.h"
#include "charts/chart_content.h"
#include "charts/chart_panel.h"
#include "charts/comparison_card.h"
#include "common/format.h"
#include "experiment/run_store.h"
#include "history/history_model.h"
#include "history/history_view.h"
#include "insight/bar_chart_render.h"
#include "insight/breakdown.h"
#include "insight/insight_export.h"
#include "insight/insight_panel.h"
#include "insight/prediction.h"
#include "records/chrome_trace.h"
#include "setup/run_setup_panel.h"
#include "setup/what_if_picker.h"
#include "gui_process.h"
#include "gui_window_fixture.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace mb;

namespace {

constexpr int kTrain = 512, kVal = 128;
constexpr int kRunTimeoutMs = 60000;

PhaseTimes phases(double f, double b, double a, double o, double w) {
  PhaseTimes t;
  t[phase::Forward] = f, t[phase::Backward] = b, t[phase::AllReduce] = a, t[phase::Optimizer] = o, t[phase::Wait] = w;
  return t;
}

// Replica r in epoch e: known, distinct numbers.
PhaseTimes known(int e, int r) { return phases(0.10 + 0.01 * e, 0.20 + 0.02 * r, 0.03 + 0.001 * e, 0.01, 0.05 * r); }

RunRecord timed_run(const std::string& id, int replicas, int epochs, int slow = -1) {
  RunRecord r;
  r.id = id;
  r.config.devices = cpu_replicas(replicas);
  r.config.replicas = replicas;
  r.config.global_batch = 128;
  r.config.per_replica_batch = 128 / replicas;
  r.config.dataset = "synthetic";
  r.config.train_size = 60000;
  r.config.backend = Backend::OneDnn;
  r.config.scenario.straggler.replica = slow;
  r.config.scenario.straggler.factor = slow >= 0 ? 3.0 : 1.0;
  r.config.epochs = epochs;
  r.config.start_time = "2026-01-01T00:00:0" + std::to_string(replicas % 10) + "Z";
  for (int e = 1; e <= epochs; ++e) {
    EpochMetrics m;
    m.epoch = e;
    m.time_s = 1.0 + 0.1 * e;
    for (int k = 0; k < replicas; ++k) m.replica_times.push_back(known(e, k));
    r.epochs.push_back(m);
  }
  return r;
}

ShownRun shown(const RunRecord& r, bool live = false, bool baseline = false) {
  ShownRun s;
  s.record = r;
  s.label = default_run_name(r.config);
  s.colour = baseline ? baseline_colour(0) : run_colour(0);
  s.live = live;
  s.baseline = baseline;
  return s;
}

// compute(k, b) = 1 ms + 0.1 ms * b at every concurrency; all-reduce among 2 ranks:
// 10 us + 1 ns/byte (as test_scaling's synthetic calibration).
MachineCalibration synthetic_calibration(int cores = 2) {
  MachineCalibration m;
  Calibration& c = m.calibration;
  c.device = "synthetic";
  c.communicator = "threads";
  c.cores = cores;
  c.train_size = 60000;
  c.gradient_bytes = 487720;
  for (int k : {1, 2})
    for (int64_t b : {16, 32, 64, 128}) c.compute.push_back({k, b, 1e-3 + 1e-4 * double(b)});
  for (double bytes : {4096.0, 65536.0, 487720.0, 4194304.0}) c.allreduce.push_back({2, bytes, 10e-6 + 1e-9 * bytes});
  m.backend = Backend::OneDnn;
  m.measured_at = "2026-01-01T00:00:00Z";
  return m;
}

const SeriesSpec* series(const ChartContent& c, const QString& id) {
  for (const auto& s : c.series)
    if (s.id == id) return &s;
  return nullptr;
}

}  // namespace

class TestInsight : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void init();
  void cleanup();

  void breakdown_bars_are_the_replica_times_data();
  void breakdown_bars_are_the_replica_times();
  void breakdown_shows_the_epoch_in_progress();
  void breakdown_puts_the_baseline_first();
  void breakdown_shows_the_other_modes_waiting();
  void breakdown_says_what_the_backward_pass_hid();
  void card_says_what_bounds_the_run();
  void what_if_link_says_whether_it_changes_anything_here();
  void calibrations_are_kept_per_model();
  void honest_about_gpu_and_untimed_runs();
  void timeline_lays_the_last_steps_end_to_end();
  void timeline_reads_a_kept_trace();
  void bar_chart_tip_is_the_hovered_segment();
  void prediction_chart_holds_the_predicted_points();
  void card_states_predicted_vs_measured();
  void straggler_reaches_the_config_and_every_label();
  void a_run_keeps_a_trace_and_exports_it();
  void exports_write_what_the_page_shows();
  void calibration_runs_aside_and_blocks_runs();
  void scripted_mode_straggler_and_insight_page();

 private:
  void fill(int epochs, int replicas);
  RunRecord click_and_wait(const char* button) { return fx_.click_and_wait(button, kRunTimeoutMs); }

  test::WindowFixture fx_{kTrain, kVal};
  // Short names for the fixture's parts, as the test bodies use them.
  const QString& data_dir_ = fx_.data_dir;
  std::unique_ptr<MainWindow>& window_ = fx_.window;
};

void TestInsight::initTestCase() {
  const QString failed = fx_.prepare();
  QVERIFY2(failed.isEmpty(), qPrintable(failed));
}

void TestInsight::init() { QVERIFY(fx_.open_window()); }

void TestInsight::cleanup() { fx_.close_window(); }

void TestInsight::fill(int epochs, int replicas) {
  const QString problems = fx_.fill({.epochs = epochs, .replicas = replicas});
  QVERIFY2(problems.isEmpty(), qPrintable(problems));
}

// ---- The breakdown ------------------------------------------------------------------------

void TestInsight::breakdown_bars_are_the_replica_times_data() {
  QTest::addColumn<int>("replicas");
  QTest::addColumn<int>("epochs");
  QTest::addColumn<int>("slow");
  QTest::addColumn<int>("first_shown");   // the oldest epoch that still fits
  QTest::newRow("2 replicas, 3 epochs") << 2 << 3 << -1 << 1;
  QTest::newRow("4 replicas, a straggler") << 4 << 2 << 2 << 1;
  QTest::newRow("20 epochs: the last 8") << 2 << 20 << -1 << 13;
  QTest::newRow("16 replicas: the last 2 epochs") << 16 << 5 << -1 << 4;
}

void TestInsight::breakdown_bars_are_the_replica_times() {
  QFETCH(int, replicas);
  QFETCH(int, epochs);
  QFETCH(int, slow);
  QFETCH(int, first_shown);
  const RunRecord r = timed_run("run", replicas, epochs, slow);
  const BarChartContent c = build_breakdown({shown(r)}, nullptr);
  QVERIFY(c.empty_text.isEmpty());
  QCOMPARE(int(c.groups.size()), epochs - first_shown + 1);
  double most = 0;
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const int epoch = first_shown + int(g);
    const BarGroup& group = c.groups[g];
    QCOMPARE(group.label, QString("epoch %1").arg(epoch));
    QVERIFY(!group.partial);
    QCOMPARE(int(group.bars.size()), replicas);
    for (int k = 0; k < replicas; ++k) {
      const Bar& bar = group.bars[std::size_t(k)];
      const PhaseTimes t = known(epoch, k);
      QCOMPARE(bar.segments.size(), std::size_t(3));   // compute, communication, waiting, bottom up
      QCOMPARE(bar.segments[0].start, 0.0);
      QCOMPARE(bar.segments[0].length, t.compute_s());
      QCOMPARE(bar.segments[1].start, t.compute_s());
      QCOMPARE(bar.segments[1].length, t[phase::AllReduce]);
      QCOMPARE(bar.segments[2].start, t.compute_s() + t[phase::AllReduce]);
      QCOMPARE(bar.segments[2].length, t[phase::Wait]);
      QCOMPARE(bar.end(), t.total());
      QCOMPARE(bar.marked, k == slow);
      most = std::max(most, t.total());
    }
  }
  QVERIFY(c.value_max >= most);
  QVERIFY(c.value_max < 1.5 * most);
  QVERIFY(c.headline.contains(slow >= 0 ? "simulated straggler" : "compute"));
}

// Overlap (--bucket-mb): the hidden exchange is not a part of the step, so not in the bars; the
// headline and the tooltip say how much the backward pass hid.
void TestInsight::breakdown_says_what_the_backward_pass_hid() {
  RunRecord r = timed_run("overlap", 2, 1);
  for (PhaseTimes& t : r.epochs.back().replica_times) t[phase::HiddenAllReduce] = 0.25;
  const BarChartContent c = build_breakdown({shown(r)}, nullptr);
  QVERIFY2(c.headline.contains("250.0 ms more hidden under backward"), qPrintable(c.headline));
  const Bar& bar = c.groups.back().bars[0];
  QCOMPARE(bar.end(), r.epochs.back().replica_times[0].total());   // the bar is the step alone
  // Wall time beside the step, not CPU time.
  QVERIFY2(bar.segments[0].tip.contains("communication hidden under backward 250.0 ms (beside the step"),
           qPrintable(bar.segments[0].tip));
}

void TestInsight::breakdown_shows_the_epoch_in_progress() {
  RunRecord r = timed_run("live", 2, 1);
  LiveEpoch live{2, 5, 10, {phases(0.1, 0.2, 0.05, 0.01, 0.0), phases(0.1, 0.25, 0.05, 0.01, 0.04)}};
  BarChartContent c = build_breakdown({shown(r, true)}, &live);
  QCOMPARE(c.groups.size(), std::size_t(2));
  QVERIFY(c.groups[1].partial);
  QVERIFY(c.groups[1].label.contains("5/10"));
  QCOMPARE(c.groups[1].bars[1].segments[0].length, live.times[1].compute_s());
  QCOMPARE(c.groups[1].bars[1].segments[2].length, 0.04);
  // The step reports of an epoch that has ended add nothing: its record is there.
  live.epoch = 1;
  QCOMPARE(build_breakdown({shown(r, true)}, &live).groups.size(), std::size_t(1));
  // A finished run never shows a live epoch.
  live.epoch = 2;
  QCOMPARE(build_breakdown({shown(r, false)}, &live).groups.size(), std::size_t(1));
  // The first epoch in progress, nothing finished yet.
  r.epochs.clear();
  c = build_breakdown({shown(r, true)}, &live);
  QCOMPARE(c.groups.size(), std::size_t(1));
  QVERIFY(c.groups[0].partial);
  QVERIFY(build_breakdown({shown(r, true)}, nullptr).empty_text.contains("on their way"));
  // From the trainer's step report, as the window gets it.
  StepProgress p;
  p.epoch = 3, p.step = 7, p.steps = 9;
  p.epoch_times = live.times;
  const LiveEpoch from = live_epoch(p);
  QCOMPARE(from.epoch, 3);
  QCOMPARE(from.step, int64_t(7));
  QCOMPARE(from.times[1][phase::Wait], 0.04);
}

void TestInsight::breakdown_puts_the_baseline_first() {
  RunRecord base = timed_run("base", 1, 2);
  base.config.start_time = "2025-12-31T00:00:00Z";
  const RunRecord run = timed_run("run", 2, 2);
  ShownRun primary = shown(run);
  ShownRun b = shown(base, false, true);
  primary.baseline_label = b.label;
  primary.baseline_id = b.record.id;
  const BarChartContent c = build_breakdown({primary, b}, nullptr);
  QCOMPARE(c.groups.size(), std::size_t(3));
  QCOMPARE(c.groups[0].label, QString("baseline"));
  QCOMPARE(c.groups[0].bars.size(), std::size_t(1));
  // The baseline's mean epoch.
  const double mean_compute = (known(1, 0).compute_s() + known(2, 0).compute_s()) / 2;
  QVERIFY(std::fabs(c.groups[0].bars[0].segments[0].length - mean_compute) < 1e-12);
  QCOMPARE(c.groups[1].label, QString("epoch 1"));
}

void TestInsight::breakdown_shows_the_other_modes_waiting() {
  // The Lock-step vs balanced demo shows both runs: the headline of either names the other's
  // waiting, so the waiting's shrinking is read off one line. Replica 1 is the straggler:
  // replica 0's waiting over its time is what the others wait.
  RunRecord lock = timed_run("lock", 2, 2, 1), balanced = timed_run("balanced", 2, 2, 1);
  balanced.config.scenario.balance = true;
  for (auto& e : balanced.epochs) e.replica_times[0][phase::Wait] = 0.01;
  const PhaseTimes lock0 = known(2, 0);
  const QString lock_share = format_percent(lock0[phase::Wait] / lock0.total(), 0);
  PhaseTimes bal0 = known(2, 0);
  bal0[phase::Wait] = 0.01;
  const QString bal_share = format_percent(0.01 / bal0.total(), 0);
  QVERIFY(lock_share != bal_share);
  const BarChartContent on_balanced = build_breakdown({shown(balanced), shown(lock)}, nullptr);
  QVERIFY2(on_balanced.headline.contains(QString("wait %1 of their time").arg(bal_share)), qPrintable(on_balanced.headline));
  QVERIFY2(on_balanced.headline.contains(QString("lock-step: %1 waiting").arg(lock_share)), qPrintable(on_balanced.headline));
  const BarChartContent on_lock = build_breakdown({shown(lock), shown(balanced)}, nullptr);
  QVERIFY2(on_lock.headline.contains(QString("balanced: %1 waiting").arg(bal_share)), qPrintable(on_lock.headline));
  // Other settings are no counterpart: no comparison.
  RunRecord other = balanced;
  other.config.global_batch = 256;
  QVERIFY(!build_breakdown({shown(lock), shown(other)}, nullptr).headline.contains("balanced:"));
}

void TestInsight::card_says_what_bounds_the_run() {
  // From the newest epoch's breakdown, all replicas together: compute (known()),
  // the exchange, or the waiting, whichever bounds the step; with the bytes and the link.
  RunRecord r = timed_run("run", 2, 1);
  QVERIFY2(comparison_summary_html({shown(r)}).contains("Compute-bound"), qPrintable(comparison_summary_html({shown(r)})));
  QVERIFY(comparison_summary_html({shown(r)}).contains("0.5 MB a step"));   // the reference CNN's gradient
  r.config.model = reference_family(4096);
  r.config.scenario.link.gbit = 1;
  for (auto& t : r.epochs[0].replica_times) t[phase::AllReduce] = 2.0;
  const QString comm = comparison_summary_html({shown(r)});
  QVERIFY2(comm.contains("Communication-bound") && comm.contains("26.5 MB a step over the simulated 1 Gbit/s link"),
           qPrintable(comm));
  for (auto& t : r.epochs[0].replica_times) t[phase::AllReduce] = 0.01, t[phase::Wait] = 0.3;
  QVERIFY(comparison_summary_html({shown(r)}).contains("Waiting-bound"));
  // One replica: nothing is exchanged, nothing said.
  QVERIFY(!comparison_summary_html({shown(timed_run("one", 1, 1))}).contains("-bound"));
}

void TestInsight::what_if_link_says_whether_it_changes_anything_here() {
  // The synthetic calibration's all-reduce among 2: 10 us + 1 ns/byte, 0.498 ms for the
  // reference gradient. A 1 Gbit/s ring takes 2 * 1/2 * 487,720 B / 125 MB/s = 3.9 ms: it
  // sets the pace; a 400 Gbit/s one 0.01 ms: it changes nothing here.
  WhatIfPicker picker;
  auto note = [&] {
    QString all;
    for (const QLabel* l : picker.findChildren<QLabel*>()) all += l->text();
    return all;
  };
  picker.set_model(ModelSpec{});
  picker.set_link(SimulatedLink{1, 0});
  picker.set_replicas(2);
  QVERIFY2(note().contains("Calibrate"), qPrintable(note()));   // nothing to compare with yet
  const MachineCalibration m = synthetic_calibration(2);
  picker.set_calibration(&m.calibration);
  QVERIFY2(note().contains("sets the exchange's pace") && note().contains("3.9 ms"), qPrintable(note()));
  picker.set_link(SimulatedLink{400, 0});
  QVERIFY2(note().contains("changes nothing here") && note().contains("0.498 ms"), qPrintable(note()));
  picker.set_replicas(1);
  QVERIFY(note().contains("One replica exchanges nothing"));
  picker.set_link(SimulatedLink{});
  QVERIFY(!note().contains("exchange"));   // no link: nothing said about one
}

void TestInsight::honest_about_gpu_and_untimed_runs() {
  RunRecord gpu = timed_run("gpu", 2, 2);
  gpu.config.devices = parse_devices("cuda:0,cuda:1");
  gpu.config.backend = Backend::Cuda;
  gpu.comm.replicas = 2;
  gpu.comm.bytes = 487720;
  gpu.comm.exposed_s = 0.0004;
  gpu.comm.busbw_gbs = 12.5;
  BarChartContent c = build_breakdown({shown(gpu)}, nullptr);
  QVERIFY(c.groups.empty());   // no bars of numbers the host did not measure
  QVERIFY(c.empty_text.contains("GPU"));
  QVERIFY(c.empty_text.contains("0.40 ms"));
  QVERIFY(c.empty_text.contains("12.5 GB/s"));
  TimelineSource source;
  source.config = gpu.config;
  source.steps.push_back({1, 1, {known(1, 0), known(1, 1)}});
  const BarChartContent t = build_timeline(&source, "gpu");
  QVERIFY(t.groups.empty());
  QVERIFY(t.empty_text.contains("GPU"));

  RunRecord old = timed_run("old", 2, 2);
  for (auto& e : old.epochs) e.replica_times.clear();   // a record from before the breakdown
  c = build_breakdown({shown(old)}, nullptr);
  QVERIFY(c.groups.empty());
  QVERIFY(c.empty_text.contains("no per-replica breakdown"));
  RunRecord untimed = timed_run("untimed", 2, 1);
  untimed.epochs[0].replica_times.assign(2, PhaseTimes{});   // --no-breakdown
  c = build_breakdown({shown(untimed)}, nullptr);
  QVERIFY(c.empty_text.contains("did not time"));
  QVERIFY(build_breakdown({}, nullptr).empty_text.contains("No run"));
  QVERIFY(!build_timeline(nullptr, "cpu:2").empty_text.isEmpty());
}

// ---- The timeline -------------------------------------------------------------------------

void TestInsight::timeline_lays_the_last_steps_end_to_end() {
  RunConfig config = timed_run("x", 2, 1, 1).config;
  StepProgress p;
  p.epoch = 2, p.step = 10, p.steps = 20;
  for (int k = 0; k < 3; ++k)   // reports of steps 8, 9, 10
    p.recent.push_back({phases(1e-3 * (k + 1), 2e-3, 0.5e-3, 0.2e-3, 0.1e-3 * k), phases(1.5e-3, 2.5e-3, 0.5e-3, 0.2e-3, 0)});
  const TimelineSource source = timeline_from_progress(p, config);
  QCOMPARE(source.steps.size(), std::size_t(3));
  QCOMPARE(source.steps[0].step, int64_t(8));
  QCOMPARE(source.steps[2].step, int64_t(10));
  QCOMPARE(source.steps[0].epoch, 2);
  const BarChartContent c = build_timeline(&source, "cpu:2");
  QVERIFY(c.rows);
  QCOMPARE(c.groups.size(), std::size_t(1));
  QCOMPARE(c.groups[0].bars.size(), std::size_t(2));
  QVERIFY(c.groups[0].bars[1].marked);   // the simulated straggler's row
  for (int r = 0; r < 2; ++r) {
    const Bar& bar = c.groups[0].bars[std::size_t(r)];
    // Every non-empty phase of every step, in the trace's order, end to end from 0.
    std::vector<double> expected;
    for (const auto& report : p.recent)
      for (int ph = 0; ph < phase::ComputeCpu; ++ph)   // the parts of a step, not what was measured beside it
        if (report[std::size_t(r)][ph] > 0) expected.push_back(report[std::size_t(r)][ph]);
    QCOMPARE(bar.segments.size(), expected.size());
    double at = 0;
    for (std::size_t s = 0; s < expected.size(); ++s) {
      QCOMPARE(bar.segments[s].length, expected[s]);
      QVERIFY(std::fabs(bar.segments[s].start - at) < 1e-15);
      at += expected[s];
    }
  }
  QCOMPARE(c.groups[0].bars[0].segments[0].name, QString("forward"));
  QCOMPARE(c.groups[0].bars[0].segments[2].name, QString("all-reduce"));   // no wait in that step: skipped
  // Step boundaries of replica 0, labelled with the steps.
  QCOMPARE(c.marks.size(), std::size_t(3));
  QCOMPARE(c.marks[0].at, 0.0);
  QVERIFY(std::fabs(c.marks[1].at - p.recent[0][0].total()) < 1e-15);
  QCOMPARE(c.marks[0].label, QString("e2 s8"));
  QCOMPARE(c.marks[2].label, QString("s10"));
  QVERIFY(c.headline.contains("live"));
  QVERIFY(c.headline.contains("steps 8–10 of 20"));
  QCOMPARE(c.value_scale, 1000.0);   // milliseconds

  // Reports that reach back into the previous epoch are numbered there.
  p.step = 1;
  const TimelineSource across = timeline_from_progress(p, config);
  QCOMPARE(across.steps[0].epoch, 1);
  QCOMPARE(across.steps[0].step, int64_t(19));
  QCOMPARE(across.steps[2].epoch, 2);
  QCOMPARE(across.steps[2].step, int64_t(1));
}

void TestInsight::timeline_reads_a_kept_trace() {
  RunRecord record = timed_run("traced", 2, 2);
  std::vector<std::vector<TraceStep>> traces(2);
  double t = 0;
  for (int e = 1; e <= 2; ++e)
    for (int s = 1; s <= 9; s += 4)   // every 4th step sampled
      for (int r = 0; r < 2; ++r) {
        traces[std::size_t(r)].push_back({t, phases(1e-3 * s, 2e-3, 0.3e-3 * e, 0.1e-3, 0.2e-3 * r), e, s});
        t += 0.01;
      }
  const TimelineSource source = timeline_from_trace(chrome_trace_json(record, traces), record, 4);
  QVERIFY(source.sampled);
  QCOMPARE(source.sample_every, int64_t(4));
  QCOMPARE(source.steps.size(), std::size_t(4));   // the last 4 of 6
  QCOMPARE(source.steps[0].epoch, 1);
  QCOMPARE(source.steps[0].step, int64_t(9));
  QCOMPARE(source.steps[3].epoch, 2);
  QCOMPARE(source.steps[3].step, int64_t(9));
  for (int r = 0; r < 2; ++r) {
    const PhaseTimes& got = source.steps[3].replicas[std::size_t(r)];
    const PhaseTimes want = phases(9e-3, 2e-3, 0.6e-3, 0.1e-3, 0.2e-3 * r);
    for (int ph = 0; ph < phase::ComputeCpu; ++ph) QVERIFY(std::fabs(got[ph] - want[ph]) < 1e-12);
  }
  const BarChartContent c = build_timeline(&source, "cpu:2");
  QVERIFY(c.title.contains("Sampled"));
  QVERIFY(c.headline.contains("one step in 4"));
  QVERIFY_THROWS_EXCEPTION(DataError, timeline_from_trace("{\"nothing\": 1}", record));
  QVERIFY_THROWS_EXCEPTION(DataError, timeline_from_trace("not json", record));
}

void TestInsight::bar_chart_tip_is_the_hovered_segment() {
  const BarChartContent c = build_breakdown({shown(timed_run("run", 2, 1))}, nullptr);
  const QRectF area(0, 0, 600, 400);
  const BarChartLayout layout = layout_bar_chart(c, area);
  QCOMPARE(layout.segments.size(), std::size_t(6));
  for (const auto& placed : layout.segments) {
    if (placed.rect.height() < 1) continue;
    const QString tip = bar_chart_tip(c, area, placed.rect.center());
    QCOMPARE(tip, c.groups[placed.group].bars[placed.bar].segments[placed.segment].tip);
  }
  QVERIFY(bar_chart_tip(c, area, QPointF(2, 2)).isEmpty());
  // What is drawn is what is laid out: the compute segment of replica 1 is taller than replica 0's.
  QVERIFY(layout.segments[3].rect.height() > layout.segments[0].rect.height());
}

// ---- The scaling predictor ----------------------------------------------------------------

void TestInsight::prediction_chart_holds_the_predicted_points() {
  const MachineCalibration m = synthetic_calibration(2);
  RunRecord one = timed_run("one", 1, 1), two = timed_run("two", 2, 1), per = timed_run("per", 2, 1);
  per.config.per_replica_batch_mode = true;
  per.config.per_replica_batch = 128;
  per.config.global_batch = 256;
  RunRecord small = timed_run("small", 2, 1), slow = timed_run("reference", 2, 1), straggler = timed_run("straggler", 2, 1, 1);
  small.config.train_size = 2048;   // other settings: not on this chart
  slow.config.backend = Backend::Reference;
  const std::vector<RunRecord> history{one, two, per, small, slow, straggler};

  const PredictionScope scope = prediction_scope(nullptr, &m, history, 0);
  QCOMPARE(scope.batch, int64_t(128));
  QCOMPARE(scope.train_size, int64_t(60000));
  QCOMPARE(scope.max_replicas, 4);   // twice the cores
  Calibration cal = m.calibration;
  const std::vector<Prediction> want = predict_scaling(cal, PredictOptions{4, 128, 0, 20e-6});

  const ChartContent c = build_prediction_chart(&m, scope, history, nullptr);
  const SeriesSpec* global = series(c, "predicted/global");
  const SeriesSpec* beyond = series(c, "predicted/global-beyond");
  const SeriesSpec* per_replica = series(c, "predicted/per-replica");
  QVERIFY(global && beyond && per_replica);
  QCOMPARE(global->points.size(), qsizetype(2));   // 1 and 2 replicas: this machine
  for (const Prediction& p : want) {
    if (p.mode != BatchMode::Global) continue;
    const SeriesSpec* s = p.beyond_machine ? beyond : global;
    bool found = false;
    for (const QPointF& pt : s->points) found = found || (pt.x() == p.replicas && pt.y() == p.epoch_s);
    QVERIFY2(found, qPrintable(QString("%1 replicas").arg(p.replicas)));
  }
  QVERIFY(beyond->pen.style() == Qt::DashLine);   // beyond the machine: dashed, from the last solid point
  QCOMPARE(beyond->points.front(), global->points.back());
  QVERIFY(beyond->tips.back().contains("share cores"));
  QVERIFY(c.title.contains("dashed"));
  QVERIFY(!c.title.contains("--link-gbps"));   // the command line's advice stays on the command line

  // The history's runs of these settings, as measured points; the others are not.
  const SeriesSpec* measured = series(c, "measured/global");
  const SeriesSpec* measured_per = series(c, "measured/per-replica");
  QVERIFY(measured && measured_per);
  QVERIFY(!measured->line);
  QCOMPARE(measured->points, (QList<QPointF>{QPointF(1, one.mean_epoch_time()), QPointF(2, two.mean_epoch_time())}));
  QCOMPARE(measured_per->points, (QList<QPointF>{QPointF(2, per.mean_epoch_time())}));

  // More machines over a link: the replicas beyond the cores on a second machine.
  PredictionScope linked = scope;
  linked.link_gbps = 10;
  const ChartContent l = build_prediction_chart(&m, linked, history, nullptr);
  QVERIFY(series(l, "predicted/global-beyond")->tips.back().contains("machines"));

  // Without a calibration: the measured points alone, and what to press.
  const ChartContent none = build_prediction_chart(nullptr, scope, history, nullptr);
  QVERIFY(!series(none, "predicted/global"));
  QVERIFY(series(none, "measured/global"));
  QVERIFY(none.title.contains("Calibrate"));

  // A calibration survives the file it is kept in.
  QTemporaryDir tmp;
  const fs::path file = fs::path(tmp.path().toStdString()) / "calibration.json";
  save_machine_calibration(file, m);
  std::string warning;
  const auto back = load_machine_calibration(file, &warning);
  QVERIFY(back && warning.empty());
  QCOMPARE(predictions_for(*back, scope).back().epoch_s, predictions_for(m, scope).back().epoch_s);
  test::write_bytes(file, "{}");
  QVERIFY(!load_machine_calibration(file, &warning));
  QVERIFY(!warning.empty());
}

void TestInsight::card_states_predicted_vs_measured() {
  RunRecord r = timed_run("run", 2, 1);
  r.epochs[0].time_s = 3.6;
  ShownRun s = shown(r);
  s.predicted = PredictedEpoch{3.4, {}};
  QString html = comparison_summary_html({s});
  QVERIFY2(html.contains("predicted 3.40 s, measured 3.60 s, <b>+6 %</b>"), qPrintable(html));

  // From the calibration: the model's epoch for the run's replicas, batch and size.
  const MachineCalibration m = synthetic_calibration(2);
  std::vector<ShownRun> runs{shown(r)};
  add_predictions(runs, &m, 0);
  QVERIFY(runs[0].predicted);
  Calibration cal = m.calibration;
  double want = 0;
  for (const Prediction& p : predict_scaling(cal, PredictOptions{2, 128, 0, 20e-6}))
    if (p.replicas == 2 && p.mode == BatchMode::Global) want = p.epoch_s;
  QCOMPARE(runs[0].predicted->epoch_s, want);
  const QString expected = QString("predicted %1, measured %2, <b>%3</b>")
                               .arg(format_seconds(want), format_seconds(3.6), format_deviation(3.6 / want - 1));
  QVERIFY2(comparison_summary_html(runs).contains(expected), qPrintable(expected));
  // The prediction chart says the same.
  const ChartContent c = build_prediction_chart(&m, prediction_scope(&r.config, &m, {}, 0), {}, &runs[0]);
  QVERIFY(QString(c.title).replace("<br>", " ").contains(QString("predicted %1, measured %2").arg(format_seconds(want), format_seconds(3.6))));
  QVERIFY(series(c, "measured/on-display"));

  // A straggler's run, lock-step and balanced: the model has the straggler and the mode too.
  RunRecord slow = timed_run("slow", 2, 1, 1);
  for (const bool balanced : {false, true}) {
    slow.config.scenario.balance = balanced;
    runs = {shown(slow)};
    add_predictions(runs, &m, 0);
    PredictOptions o{2, 128, 0, 20e-6};
    o.scenario.straggler.replica = 1;
    o.scenario.straggler.factor = 3;
    o.scenario.balance = balanced;
    double with_straggler = 0;
    for (const Prediction& p : predict_scaling(cal, o))
      if (p.replicas == 2 && p.mode == BatchMode::Global) with_straggler = p.epoch_s;
    QCOMPARE(runs[0].predicted->epoch_s, with_straggler);
    QVERIFY(with_straggler > want);   // slower than without the straggler, in either mode
    const ChartContent sc = build_prediction_chart(&m, prediction_scope(&slow.config, &m, {}, 0), {}, &runs[0]);
    QVERIFY(series(sc, "predicted/global")->tips.back().contains(balanced ? "balanced shares" : "lock-step"));
    QVERIFY(series(sc, "predicted/global")->tips.back().contains("straggler"));
  }
  // A simulated link's run: predicted over that link (and its points are not a plain run's).
  RunRecord linked = timed_run("linked", 2, 1);
  linked.config.scenario.link.gbit = 1;
  linked.config.scenario.link.latency_us = 50;
  runs = {shown(linked)};
  add_predictions(runs, &m, 0);
  PredictOptions over_link{2, 128, 0, 20e-6};
  over_link.scenario.link.gbit = 1;
  over_link.scenario.link.latency_us = 50;
  double with_link = 0;
  for (const Prediction& p : predict_scaling(cal, over_link))
    if (p.replicas == 2 && p.mode == BatchMode::Global) with_link = p.epoch_s;
  QCOMPARE(runs[0].predicted->epoch_s, with_link);
  QVERIFY(with_link > want);
  QVERIFY(!measured_in_scope(linked, prediction_scope(&r.config, &m, {}, 0), &m));
  QVERIFY(measured_in_scope(linked, prediction_scope(&linked.config, &m, {}, 0), &m));
  // GPUs or other kernels: no prediction, and why.
  RunRecord gpu = timed_run("gpu", 2, 1);
  gpu.config.backend = Backend::Cuda;
  gpu.config.devices = parse_devices("cuda:0,cuda:1");
  runs = {shown(gpu)};
  add_predictions(runs, &m, 0);
  QVERIFY(!runs[0].predicted);
  QVERIFY(runs[0].no_prediction.contains("GPUs"));
  QVERIFY(comparison_summary_html(runs).contains("GPUs"));
  add_predictions(runs, nullptr, 0);   // no calibration: nothing said
  QVERIFY(runs[0].no_prediction.isEmpty());
  QVERIFY(!comparison_summary_html(runs).contains("Scaling predictor"));
}

// ---- The simulated straggler --------------------------------------------------------------

void TestInsight::straggler_reaches_the_config_and_every_label() {
  DeviceInventory inv;
  inv.cpu_cores = 4;
  inv.cpu_name = "Test CPU";
  inv.gpu_note = "no GPU";
  RunSetupPanel panel(inv);
  auto* group = panel.findChild<QGroupBox*>("straggler_group");
  QVERIFY(group);
  QVERIFY(group->title().contains("Simulated straggler"));
  QVERIFY(!group->isChecked());   // off by default
  QCOMPARE(panel.config().scenario.straggler.replica, -1);
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(2);
  group->setChecked(true);
  panel.findChild<QSpinBox*>("straggler_replica")->setValue(1);
  panel.findChild<QDoubleSpinBox*>("straggler_factor")->setValue(3.0);
  TrainConfig c = panel.config();
  QCOMPARE(c.scenario.straggler.replica, 1);
  QCOMPARE(c.scenario.straggler.factor, 3.0);
  QVERIFY(!panel.problems().join(" ").contains("straggler"));
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(1);
  QVERIFY(panel.problems().join(" ").contains("two or more replicas"));
  panel.findChild<QSpinBox*>("cpu_replicas")->setValue(2);
  c.scenario.straggler.replica = -1;
  panel.set_config(c);
  QVERIFY(!group->isChecked());
  c.scenario.straggler.replica = 1;
  panel.set_config(c);   // a configuration with one comes back with it
  QVERIFY(group->isChecked());
  QCOMPARE(panel.config().scenario.straggler.factor, 3.0);

  // Every label of a straggler's run says so.
  const RunRecord r = timed_run("slow", 2, 2, 1);
  QVERIFY(default_run_name(r.config).contains("simulated straggler r1 \u00d73"));
  QVERIFY(short_labels({&r}, {false}, {-1}).front().contains("simulated straggler"));
  QTemporaryDir tmp;
  HistoryModel history{RunStore(fs::path(tmp.path().toStdString()))};
  QVERIFY(history.add(r));
  const QModelIndex devices = history.index(0, HistoryModel::Devices);
  QVERIFY(history.data(devices, Qt::DisplayRole).toString().contains("simulated straggler"));
  QVERIFY(history.data(devices, Qt::ToolTipRole).toString().contains("replica 1 computes 3\u00d7 slower"));
  QVERIFY(!history.is_baseline(r));
  const ShownRun s = shown(r);
  QVERIFY(comparison_summary_html({s}).contains("simulated straggler: replica 1 computes 3\u00d7 slower"));
  const ChartContent time = build_chart(ChartKind::EpochTime, {s}, ChartOptions{});
  QVERIFY(time.series.front().name.contains("simulated straggler"));
  QVERIFY(time.title.contains("simulated straggler"));
  const BarChartContent b = build_breakdown({s}, nullptr);
  QVERIFY(b.headline.contains("simulated straggler"));
  QVERIFY(b.groups[0].bars[1].marked && !b.groups[0].bars[0].marked);
  QVERIFY(b.groups[0].bars[1].segments[0].tip.contains("simulated straggler"));
}

// ---- A real run: the trace beside its record ------------------------------------------------

void TestInsight::a_run_keeps_a_trace_and_exports_it() {
  if (window_->setup_panel()->findChild<QSpinBox*>("cpu_replicas")->maximum() < 2)
    QSKIP("needs two CPU replicas");
  fill(2, 2);
  auto* group = window_->setup_panel()->findChild<QGroupBox*>("straggler_group");
  group->setChecked(true);
  window_->setup_panel()->findChild<QSpinBox*>("straggler_replica")->setValue(1);
  window_->setup_panel()->findChild<QDoubleSpinBox*>("straggler_factor")->setValue(2.0);
  const int rows_before = window_->history()->rowCount();
  const RunRecord r = click_and_wait("run_button");
  QCOMPARE(r.status, RunStatus::Completed);
  QCOMPARE(r.config.scenario.straggler.replica, 1);   // the straggler reached the trainer
  QCOMPARE(r.config.scenario.straggler.factor, 2.0);
  QCOMPARE(r.epochs.back().replica_times.size(), std::size_t(2));

  // The trace lies beside the record, and the history lists the run once.
  const RunStore store = window_->history()->store();   // a copy: the window is replaced below
  QVERIFY(fs::exists(store.trace_file_for(r.id)));
  QVERIFY(window_->history()->has_trace(r.id));
  QCOMPARE(window_->history()->rowCount(), rows_before + 1);
  window_->history_view()->select_ids({r.id});
  QVERIFY(window_->history_view()->findChild<QPushButton*>("export_trace_button")->isEnabled());
  QTemporaryDir out;
  const QString file = out.filePath("run.trace.json");
  QString error;
  QVERIFY2(window_->export_trace(r.id, file, &error), qPrintable(error));
  const nlohmann::json j = nlohmann::json::parse(test::read_bytes(file.toStdString()));
  std::set<int> tracks;
  std::set<std::string> phases_seen;
  bool straggler_named = false;
  for (const auto& ev : j.at("traceEvents")) {
    if (ev.at("ph") == "M" && ev.at("name") == "thread_name") {
      tracks.insert(ev.at("tid").get<int>());
      straggler_named = straggler_named || ev.at("args").at("name").get<std::string>().find("simulated straggler") != std::string::npos;
    }
    if (ev.at("ph") != "X") continue;
    QVERIFY(ev.at("dur").get<double>() > 0 && ev.at("ts").get<double>() >= 0);
    phases_seen.insert(ev.at("name").get<std::string>());
  }
  QCOMPARE(tracks, (std::set<int>{0, 1}));
  QVERIFY(straggler_named);
  for (const char* phase : {"forward", "backward", "all-reduce", "optimizer"}) QVERIFY2(phases_seen.count(phase), phase);
  QCOMPARE(j.at("otherData").at("run_id").get<std::string>(), r.id);

  // The page shows the run: its breakdown, and the last steps it reported live.
  InsightPanel* insight = window_->insight_panel();
  InsightContents c = insight->contents();
  QCOMPARE(c.breakdown.groups.size(), std::size_t(2));
  QCOMPARE(c.breakdown.groups[1].bars[1].segments[0].length, r.epochs[1].replica_times[1].compute_s());
  QVERIFY(!c.timeline.groups.empty());
  QVERIFY(c.timeline.headline.contains("last steps"));

  // A new window reads the timeline from the kept trace; deleting the run deletes the trace.
  window_ = std::make_unique<MainWindow>();
  window_->history_view()->select_ids({r.id});
  c = window_->insight_panel()->contents();
  QVERIFY(c.timeline.title.contains("Sampled"));
  QCOMPARE(c.timeline.groups.at(0).bars.size(), std::size_t(2));
  QVERIFY(window_->load_warnings().empty());   // the trace is never read as a record
  window_->history()->remove({r.id});
  QVERIFY(!fs::exists(store.trace_file_for(r.id)));
  QVERIFY(!window_->export_trace(r.id, out.filePath("none.json"), &error));
}

void TestInsight::exports_write_what_the_page_shows() {
  const RunRecord r = timed_run("exported", 2, 3);
  QVERIFY(window_->history()->add(r));
  window_->history_view()->select_ids({r.id});
  window_->insight_panel()->set_calibration(synthetic_calibration(2));
  QTemporaryDir out;
  QString error;
  const QString page = out.filePath("page.png"), one = out.filePath("breakdown.png");
  QVERIFY2(window_->export_insight_png(page, QSize(1280, 800), std::nullopt, &error), qPrintable(error));
  QCOMPARE(QImage(page).size(), QSize(1280, 800));
  QVERIFY(window_->export_insight_png(one, QSize(900, 600), InsightChart::Breakdown, &error));
  const QImage image(one);
  QCOMPARE(image.size(), QSize(900, 600));
  // The bars are drawn: the compute colour fills a good part of the picture.
  int compute_pixels = 0;
  for (int y = 0; y < image.height(); y += 4)
    for (int x = 0; x < image.width(); x += 4) compute_pixels += image.pixelColor(x, y).rgb() == compute_colour().rgb();
  QVERIFY2(compute_pixels > 1000, qPrintable(QString::number(compute_pixels)));

  // The breakdown as CSV: one row per epoch and replica, the record's numbers.
  const QString csv = out.filePath("breakdown.csv");
  QVERIFY2(window_->insight_panel()->export_breakdown_csv(csv, &error), qPrintable(error));
  const QStringList lines = QString::fromStdString(test::read_bytes(csv.toStdString())).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.size(), 1 + 3 * 2);
  QVERIFY(lines[0].startsWith("run_id,devices,epoch,replica,simulated_straggler,forward_s"));
  const QStringList row = lines[6].split(',');   // epoch 3, replica 1
  QCOMPARE(row[2], QString("3"));
  QCOMPARE(row[3], QString("1"));
  QCOMPARE(row[6].toDouble(), known(3, 1)[phase::Backward]);
  QCOMPARE(row[9].toDouble(), known(3, 1)[phase::Wait]);

  // The predictions for the run on display, as CSV and as JSON.
  const QString pcsv = out.filePath("p.csv"), pjson = out.filePath("p.json");
  QVERIFY2(window_->insight_panel()->export_predictions(pcsv, &error), qPrintable(error));
  QVERIFY(window_->insight_panel()->export_predictions(pjson, &error));
  const QStringList prows = QString::fromStdString(test::read_bytes(pcsv.toStdString())).split('\n', Qt::SkipEmptyParts);
  QCOMPARE(prows.size(), 1 + 2 * 4);   // 1..4 replicas, both modes
  const nlohmann::json j = nlohmann::json::parse(test::read_bytes(pjson.toStdString()));
  QCOMPARE(j.at("predictions").size(), std::size_t(8));
  QCOMPARE(j.at("options").at("train_size").get<int64_t>(), int64_t(60000));
  QVERIFY(j.at("calibration").contains("allreduce"));
  window_->insight_panel()->set_calibration(std::nullopt);
  QVERIFY(!window_->insight_panel()->export_predictions(pjson, &error));
  QVERIFY(error.contains("Calibrate"));
}

void TestInsight::calibrations_are_kept_per_model() {
  // The predictor times the model it predicts: a what-if run of dense 4096 is predicted from
  // that model's calibration, never from the reference CNN's; each is kept in its own file.
  InsightPanel* insight = window_->insight_panel();
  const MachineCalibration reference = synthetic_calibration(2);
  MachineCalibration wide = synthetic_calibration(2);
  wide.calibration.gradient_bytes = reference_family(4096).gradient_bytes();
  QCOMPARE(calibrated_model(wide), std::string("conv32-pool-conv64-pool-dense4096-dense10"));
  RunRecord run = timed_run("wide", 2, 1);
  run.config.model = reference_family(4096);
  QVERIFY(window_->history()->add(run));
  window_->history_view()->select_ids({run.id});
  insight->set_calibration(reference);
  QVERIFY(!insight->calibration());   // the run on display trains another model
  QVERIFY(insight->findChild<QLabel*>("calibration_status")->text().contains("dense:4096 not calibrated"));
  std::vector<ShownRun> runs{shown(run)};
  add_predictions(runs, insight->calibration_to_predict(model_text(run.config.model)), 0);
  QVERIFY(!runs[0].predicted);
  QVERIFY2(runs[0].no_prediction.contains("timed reference"), qPrintable(runs[0].no_prediction));
  insight->set_calibration(wide);
  QCOMPARE(insight->calibration()->calibration.gradient_bytes, wide.calibration.gradient_bytes);
  QCOMPARE(insight->calibration_for(model_text(ModelSpec{}))->calibration.gradient_bytes, reference.calibration.gradient_bytes);
  add_predictions(runs, insight->calibration_to_predict(model_text(run.config.model)), 0);
  QVERIFY(runs[0].predicted);
  // Kept beside the reference CNN's file, and read back by the next window.
  const fs::path root = window_->history()->store().root();
  save_machine_calibration(root / "calibration-cnn-dense4096.json", wide);
  save_machine_calibration(root / "calibration.json", reference);
  window_ = std::make_unique<MainWindow>();
  QVERIFY(window_->insight_panel()->calibration_for("conv32-pool-conv64-pool-dense4096-dense10"));
  QVERIFY(window_->insight_panel()->calibration_for("conv32-pool-conv64-pool-dense64-dense10"));
}

void TestInsight::calibration_runs_aside_and_blocks_runs() {
  fill(1, 1);
  InsightPanel* insight = window_->insight_panel();
  QSignalSpy done(insight, &InsightPanel::calibration_done);
  CalibrateOptions quick;
  quick.batches = {8};
  quick.steps = 1;
  quick.round_images = 0;
  insight->set_machine_busy(true);   // while a run trains, no calibration
  QVERIFY(!insight->start_calibration(quick));
  insight->set_machine_busy(false);
  QVERIFY(insight->start_calibration(quick));
  QVERIFY(insight->calibrating());
  // Meanwhile no run starts: the buttons wait, and so does a plan asked for otherwise.
  QVERIFY(!window_->findChild<QPushButton*>("run_button")->isEnabled());
  QVERIFY(!window_->start_plan(PlanKind::Single));
  QVERIFY(!insight->start_calibration(quick));
  QVERIFY(done.wait(kRunTimeoutMs));
  QCOMPARE(done.front().front().toBool(), true);
  QVERIFY(!insight->calibrating());
  QVERIFY(insight->calibration());
  QVERIFY(!insight->calibration()->calibration.compute.empty());
  QVERIFY(window_->findChild<QPushButton*>("run_button")->isEnabled());
  QVERIFY(fs::exists(window_->history()->store().root() / "calibration.json"));
  // The next window reads it back.
  window_ = std::make_unique<MainWindow>();
  QVERIFY(window_->insight_panel()->calibration());
}

void TestInsight::scripted_mode_straggler_and_insight_page() {
  const QString app = test::gui_program();
  if (!QFile::exists(app)) QSKIP("the mirrorbench executable is not built");
  window_.reset();
  QTemporaryDir out;
  auto run = [&](const QStringList& args) { return test::run_gui(app, args, out.path(), kRunTimeoutMs); };
  QCOMPARE(run({"--run", "--slow-replica", "1", "--quit"}), kExitUsage);
  QCOMPARE(run({"--run", "--slow-replica", "1:0.5", "--quit"}), kExitUsage);
  const QString png = out.filePath("where.png");
  QCOMPARE(run({"--run", "--devices", "cpu:2", "--slow-replica", "1:2", "--epochs", "1", "--data", data_dir_,
                "--limit-train", "256", "--limit-val", "128", "--insight", "--export-insight", png, "--export-size",
                "800x500", "--quit"}),
           0);
  QCOMPARE(QImage(png).size(), QSize(800, 500));
  const RunStore store(fs::path(out.path().toStdString()));
  const auto loaded = store.load_runs();
  QCOMPARE(loaded.runs.size(), std::size_t(1));
  QCOMPARE(loaded.runs[0].config.scenario.straggler.replica, 1);
  QVERIFY(fs::exists(store.trace_file_for(loaded.runs[0].id)));
  // Predictions need a calibration: without one the export fails (3).
  QCOMPARE(run({"--export-predictions", out.filePath("p.json"), "--quit"}), kExitExportFailed);
}

QTEST_MAIN(TestInsight)
#include "test_insight.moc"

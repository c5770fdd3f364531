// The time breakdown grows by one row: a category added to the table here (as a later issue might
// add "augmenting") appears, with no other code, in the run record (and reads back, and
// records written before it still load), the runs CSV, the Chrome trace (and the timeline read
// from it), and Where the time goes (its legend, its own segment of every bar, the breakdown
// CSV). Its own binary: the table is process-wide, and the other tests count the built-in rows.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "insight/breakdown.h"
#include "insight/insight_export.h"
#include "records/chrome_trace.h"
#include "records/run_record.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;
using nlohmann::json;

namespace {

// A later schema's category: records of today lack it and still load.
const TimeCategory kAugment{.key = "augment",
                              .label = "augmenting",
                              .legend = "augmenting images",
                              .help = "cropping and flipping the replica's next batch",
                              .unit = "s",
                              .role = TimeRole::Waiting,
                              .colour = ColourRole::Extra,
                              .since_schema = 9};

RunRecord timed_record(int augment) {
  RunRecord r;
  r.id = "20261203T120000Z-cpu2-abcd";
  r.name = "cpu:2";
  r.config.devices = cpu_replicas(2);
  r.config.replicas = r.config.replicas_per_process = 2;
  r.config.global_batch = 128;
  r.config.per_replica_batch = 64;
  r.config.train_size = 1024;
  r.config.val_size = 256;
  r.config.epochs = 1;
  r.config.dataset = "synthetic";
  EpochMetrics e;
  e.epoch = 1;
  e.time_s = 1.0;
  for (int k = 0; k < 2; ++k) {
    PhaseTimes t;
    t[phase::Forward] = 0.2, t[phase::Backward] = 0.4, t[phase::Optimizer] = 0.05;
    t[phase::AllReduce] = 0.05, t[phase::Wait] = 0.05 * k, t[phase::ComputeCpu] = 0.6;
    t[augment] = 0.25 + 0.05 * k;
    e.replica_times.push_back(t);
  }
  r.epochs.push_back(e);
  return r;
}

}  // namespace

class TestTimeCategories : public QObject {
  Q_OBJECT
  int augment_ = -1;

 private slots:
  void initTestCase() {
    const std::size_t before = time_categories().size();
    augment_ = add_time_category(kAugment);
    QCOMPARE(std::size_t(augment_), before);
    QCOMPARE(time_category("augment"), augment_);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, add_time_category(kAugment));   // a key once
  }

  // Part of the step (a waiting role): in its total and its waiting share.
  void the_step_counts_it() {
    const RunRecord r = timed_record(augment_);
    const PhaseTimes& t = r.epochs[0].replica_times[1];
    QVERIFY(std::fabs(t.total() - (0.2 + 0.4 + 0.05 + 0.05 + 0.05 + 0.30)) < 1e-12);   // not the CPU time
    QVERIFY(std::fabs(t.of(TimeRole::Waiting) - 0.35) < 1e-12);
  }

  void the_record_keeps_it() {
    const RunRecord r = timed_record(augment_);
    const json j = to_json(r);
    QCOMPARE(j.at("epochs").at(0).at("replica_times").at(1).at("augment_s").get<double>(), 0.30);
    const RunRecord back = run_record_from_json(json::parse(j.dump()));
    QCOMPARE(back.epochs[0].replica_times[1][augment_], 0.30);
    // A record of today's schema, written before the category existed, still loads (0).
    json old = j;
    for (auto& t : old.at("epochs").at(0).at("replica_times")) t.erase("augment_s");
    QCOMPARE(run_record_from_json(old).epochs[0].replica_times[1][augment_], 0.0);
    // Written since, it is a field like the others: a wrong type names it.
    old = j;
    old.at("epochs").at(0).at("replica_times").at(0)["augment_s"] = "slow";
    QVERIFY(test::expect_error<DataError>([&] { run_record_from_json(old); }, "replica_times[0].augment_s"));
  }

  void the_csv_has_its_column() {
    const RunRecord r = timed_record(augment_);
    const std::string csv = runs_to_csv(std::span<const RunRecord>(&r, 1));
    const std::string header = csv.substr(0, csv.find('\n'));
    QVERIFY2(header.ends_with(",breakdown_augment_s"), header.c_str());
    const std::string row = csv.substr(csv.find('\n') + 1);
    QVERIFY2(row.find(",0.275\n") != std::string::npos, row.c_str());   // the replicas' mean
    const std::string insight = breakdown_csv(r);
    QVERIFY(insight.substr(0, insight.find('\n')).find(",augment_s") != std::string::npos);
  }

  // Laid out where the table puts it (after the built-in parts), named by its label, and read
  // back by the timeline.
  void the_trace_shows_it() {
    const RunRecord r = timed_record(augment_);
    std::vector<std::vector<TraceStep>> traces(2);
    for (int k = 0; k < 2; ++k) traces[std::size_t(k)].push_back({0.0, r.epochs[0].replica_times[std::size_t(k)], 1, 1});
    const std::string text = chrome_trace_json(r, traces);
    const json doc = json::parse(text);
    double optimizer_end = -1, input_start = -1, input_dur = -1;
    for (const json& ev : doc.at("traceEvents")) {
      if (ev.value("ph", "") != "X" || ev.value("tid", -1) != 1) continue;
      if (ev.value("name", "") == "optimizer") optimizer_end = ev.at("ts").get<double>() + ev.at("dur").get<double>();
      if (ev.value("name", "") == "augmenting") input_start = ev.at("ts").get<double>(), input_dur = ev.at("dur").get<double>();
    }
    QVERIFY(std::fabs(input_dur - 0.30e6) < 1e-6);
    QVERIFY(std::fabs(input_start - optimizer_end) < 1e-6);
    const TimelineSource source = timeline_from_trace(text, r, 4);
    QCOMPARE(source.steps.size(), std::size_t(1));
    QVERIFY(std::fabs(source.steps[0].replicas[1][augment_] - 0.30) < 1e-12);
  }

  // Where the time goes: a legend entry and a segment of its own on every replica's bar, in its
  // colour, stacked with the waiting.
  void where_the_time_goes_shows_it() {
    ShownRun run;
    run.record = timed_record(augment_);
    run.label = QStringLiteral("cpu:2");
    const BarChartContent c = build_breakdown({run}, nullptr);
    bool in_legend = false;
    for (const LegendEntry& e : c.legend) in_legend = in_legend || e.name == QStringLiteral("augmenting images");
    QVERIFY(in_legend);
    QCOMPARE(c.groups.size(), std::size_t(1));
    for (std::size_t k = 0; k < 2; ++k) {
      const Bar& bar = c.groups[0].bars[k];
      bool found = false;
      for (const BarSegment& s : bar.segments)
        if (s.colour == category_colour(augment_)) {
          found = true;
          QVERIFY(std::fabs(s.length - run.record.epochs[0].replica_times[k][augment_]) < 1e-12);
        }
      QVERIFY(found);
      QVERIFY(bar.segments.back().tip.contains(QStringLiteral("augmenting images")));
    }
  }
};

QTEST_MAIN(TestTimeCategories)
#include "test_time_categories.moc"

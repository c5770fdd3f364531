// The batch-size sweep (core/experiment/sweep.h), on synthetic histories with known answers:
// which configurations are planned, time to the target accuracy (training time up to the
// first epoch at or above it), the best configuration, and the JSON/CSV forms.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "experiment/sweep.h"
#include "record_fixtures.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;

namespace {

// A record with one epoch per (time, val_acc) pair.
RunRecord history(const std::string& id, std::initializer_list<std::pair<double, double>> epochs) {
  RunRecord r;
  r.id = id;
  r.epochs = test::epoch_history(epochs);
  return r;
}

}  // namespace

class TestSweep : public QObject {
  Q_OBJECT
 private slots:
  void points_with_and_without_scaling() {
    SweepOptions o;
    o.base.lr = 1e-3;
    const auto p = sweep_points(o);
    // 5 unscaled, then 4 scaled: at the reference batch 128 scaling changes nothing.
    QCOMPARE(int(p.size()), 9);
    QCOMPARE(p[0].global_batch, int64_t(64));
    QVERIFY(!p[0].scale_lr && p[0].lr == 1e-3);
    QCOMPARE(p[5].global_batch, int64_t(64));
    QVERIFY(p[5].scale_lr);
    QCOMPARE(p[5].lr, 0.5e-3);
    QCOMPARE(p[8].global_batch, int64_t(1024));
    QCOMPARE(p[8].lr, 8e-3);
    for (const auto& q : p) QVERIFY(!(q.scale_lr && q.global_batch == 128));
    const auto plan = make_sweep_plan(o);
    QCOMPARE(plan.size(), p.size());
    QCOMPARE(plan[8].config.batch, int64_t(1024));
    QCOMPARE(plan[8].config.lr, 8e-3);
    QVERIFY(!plan[8].config.scale_lr && !plan[8].config.per_replica_batch);
  }

  void impossible_lists_are_refused_data() {
    QTest::addColumn<QString>("batches");
    QTest::addColumn<double>("target");
    QTest::addColumn<QString>("says");
    QTest::addRow("empty") << "" << 0.85 << "at least one";
    QTest::addRow("twice") << "64,64" << 0.85 << "listed twice";
    QTest::addRow("zero") << "0" << 0.85 << "outside";
    QTest::addRow("target above 1") << "64" << 1.5 << "--target";
  }
  void impossible_lists_are_refused() {
    QFETCH(QString, batches);
    QFETCH(double, target);
    QFETCH(QString, says);
    SweepOptions o;
    o.batches.clear();
    for (const QString& b : batches.split(',', Qt::SkipEmptyParts)) o.batches.push_back(b.toLongLong());
    o.target_val_acc = target;
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {says}));
  }

  void time_to_target_counts_training_time() {
    const SweepPoint p{256, true, 2e-3};
    const SweepResult r = summarize_run(p, history("a", {{3.0, 0.80}, {2.0, 0.84}, {2.0, 0.86}, {2.0, 0.87}}), 0.85);
    QVERIFY(r.time_to_target_s.has_value());
    QCOMPARE(*r.time_to_target_s, 7.0);   // epochs 1-3
    QCOMPARE(*r.epochs_to_target, 3);
    QCOMPARE(r.epoch_s, 2.0);             // steady state: the median of epochs 2..4
    QCOMPARE(r.val_acc, 0.87);
    // Exactly at the target counts as reached.
    QCOMPARE(*summarize_run(p, history("b", {{1.0, 0.85}}), 0.85).time_to_target_s, 1.0);
    QVERIFY(!summarize_run(p, history("c", {{1.0, 0.849}}), 0.85).time_to_target_s);
  }

  void the_best_is_fastest_to_the_target() {
    const std::vector<SweepPoint> points{{64, false, 1e-3}, {512, false, 1e-3}, {512, true, 4e-3}};
    const std::vector<RunRecord> runs{history("slow", {{4.0, 0.86}, {4.0, 0.88}}),
                                      history("never", {{1.0, 0.70}, {1.0, 0.80}}),
                                      history("fast", {{1.5, 0.84}, {1.5, 0.86}})};
    const SweepSummary s = summarize_sweep(points, runs, 0.85);
    QCOMPARE(s.best, 2);   // 3.0 s against 4.0 s
    QVERIFY2(QString::fromStdString(s.verdict).contains("batch 512, lr scaled"), s.verdict.c_str());
    const nlohmann::json j = to_json(s);
    QCOMPARE(j.at("best").get<int>(), 2);
    const auto& never = j.at("configurations").at(1);
    for (const char* key : {"global_batch", "scale_lr", "epoch_s", "val_acc", "time_to_target_s"}) QVERIFY(never.contains(key));
    QVERIFY(never.at("time_to_target_s").is_null());
    QCOMPARE(j.at("configurations").at(2).at("time_to_target_s").get<double>(), 3.0);
    QCOMPARE(QString::fromStdString(sweep_csv(s)).count('\n'), 4);
    QVERIFY(QString::fromStdString(sweep_text(s)).contains("not reached"));
  }

  void nothing_reached_names_the_most_accurate() {
    const std::vector<SweepPoint> points{{64, false, 1e-3}, {128, false, 1e-3}};
    const SweepSummary s = summarize_sweep(points, {history("a", {{1, 0.70}}), history("b", {{1, 0.75}})}, 0.85);
    QCOMPARE(s.best, 1);
    QVERIFY2(QString::fromStdString(s.verdict).startsWith("no configuration reached 85.0 %"), s.verdict.c_str());
  }
};

QTEST_GUILESS_MAIN(TestSweep)
#include "test_sweep.moc"

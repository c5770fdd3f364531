// The sweeps (core/experiment/sweep.h), on synthetic histories with known answers: which
// configurations are planned, time to the target accuracy (training time up to the first
// epoch at or above it), the speed-up over one replica of the same model, the best
// configuration, the lists as typed, and the JSON/CSV forms.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "experiment/planner.h"
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

  void a_model_sweep_runs_each_model_on_1_to_n_replicas() {
    SweepOptions o;
    o.axis = SweepAxis::Model;
    o.base.devices = cpu_replicas(3);
    o.base.batch = 96;
    o.base.scenario.link.gbit = 10;   // the base's link stays on every multi-replica run of a model sweep
    o.models = {ModelSpec{}, reference_family(4096)};
    const auto points = sweep_points(o);
    QCOMPARE(points.size(), std::size_t(6));
    const auto plan = make_sweep_plan(o);
    for (std::size_t i = 0; i < points.size(); ++i) {
      QCOMPARE(points[i].replicas, int(i % 3) + 1);
      QVERIFY(points[i].model == o.models[i / 3]);
      const TrainConfig& c = plan[i].config;
      QCOMPARE(format_devices(c.devices), "cpu:" + std::to_string(i % 3 + 1));
      QVERIFY(c.model == o.models[i / 3]);
      QCOMPARE(c.batch, int64_t(96));   // the base's batch and lr: only the model and the replicas vary
      QCOMPARE(c.scenario.link.gbit, 10.0);
    }
    QCOMPARE(point_name(SweepAxis::Model, points[4]), std::string("dense:4096 on 2 replicas"));
  }

  void a_link_sweep_runs_one_replica_then_each_link() {
    SweepOptions o;
    o.axis = SweepAxis::Link;
    o.base.devices = cpu_replicas(2);
    o.base.model = reference_family(4096);
    o.links = parse_sweep_links("off, 1:50");
    const auto points = sweep_points(o);
    QCOMPARE(points.size(), std::size_t(3));
    QCOMPARE(points[0].replicas, 1);
    QCOMPARE(points[0].link.gbit, 0.0);
    QCOMPARE(points[1].replicas, 2);
    QCOMPARE(points[1].link.gbit, 0.0);
    QCOMPARE(points[2].link.gbit, 1.0);
    QCOMPARE(points[2].link.latency_us, 50.0);
    const auto plan = make_sweep_plan(o);
    QCOMPARE(plan[2].config.scenario.link.gbit, 1.0);
    QCOMPARE(plan[2].config.scenario.link.latency_us, 50.0);
    QCOMPARE(plan[0].config.scenario.link.gbit, 0.0);
    QVERIFY(plan[2].config.model == reference_family(4096));
    QCOMPARE(point_name(SweepAxis::Link, points[2]), std::string("2 replicas, simulated 1 Gbit/s (50 us)"));
  }

  // The remedy axis: one replica bare, N bare, then N with each remedy over the base's link;
  // each configuration carries only its remedy's fields; the table puts each remedy's epoch,
  // speed-up and accuracy side by side.
  void a_remedy_sweep_runs_bare_then_each_remedy() {
    SweepOptions o;
    o.axis = SweepAxis::Remedy;
    o.base.devices = cpu_replicas(2);
    o.base.model = reference_family(4096);
    o.base.scenario.link = {1, 50};
    o.base.scenario.accumulate = 4;   // the picker's remedy: the axis decides every point's
    o.remedies = parse_sweep_remedies("accumulate:8, bf16, bucket:25, accumulate:8+fp16, powersgd:4");
    QCOMPARE(sweep_remedies_text(o.remedies), std::string("accumulate:8, bf16, bucket:25, accumulate:8+fp16, powersgd:4"));
    const auto points = sweep_points(o);
    QCOMPARE(points.size(), std::size_t(7));
    QCOMPARE(points[0].replicas, 1);
    QVERIFY(!points[0].remedy.comm_remedy() && !points[1].remedy.comm_remedy());
    QCOMPARE(points[1].replicas, 2);
    QCOMPARE(points[2].remedy.accumulate, 8);
    QVERIFY(points[3].remedy.allreduce_dtype == WireDtype::Bf16);
    QCOMPARE(points[4].remedy.bucket_mb, 25.0);
    QVERIFY(points[5].remedy.accumulate == 8 && points[5].remedy.allreduce_dtype == WireDtype::Fp16);
    const auto plan = make_sweep_plan(o);
    QCOMPARE(plan[1].config.scenario.accumulate, 1);   // bare
    QCOMPARE(plan[2].config.scenario.accumulate, 8);
    QVERIFY(plan[3].config.scenario.allreduce_dtype == WireDtype::Bf16 && plan[3].config.scenario.accumulate == 1);
    QCOMPARE(plan[4].config.scenario.bucket_mb, 25.0);
    QCOMPARE(plan[6].config.scenario.powersgd_rank, 4);   // every remedy field reaches its run
    QCOMPARE(plan[5].config.scenario.powersgd_rank, 0);
    QCOMPARE(short_remedy_name(points[6].remedy), std::string("psgd 4"));
    QCOMPARE(short_remedy_name(points[5].remedy), std::string("acc 8+fp16"));
    QCOMPARE(remedy_name(points[6].remedy), std::string("PowerSGD rank 4"));
    for (const PlannedRun& p : plan) QCOMPARE(p.config.scenario.link.gbit, 1.0);
    QCOMPARE(point_name(SweepAxis::Remedy, points[5]), std::string("2 replicas, accumulate 8, fp16 all-reduce"));
    QCOMPARE(remedy_name(points[4].remedy), std::string("overlap, 25 MB buckets"));

    const SweepSummary s = summarize_sweep(points,
                                           {history("one", {{6.0, 0.80}}), history("bare", {{12.0, 0.80}}),
                                            history("acc", {{4.0, 0.70}}), history("bf16", {{8.0, 0.80}})},
                                           0.85, SweepAxis::Remedy);
    QCOMPARE(*s.results[2].speedup, 1.5);
    QCOMPARE(s.best, 2);
    QCOMPARE(s.verdict, std::string("2 replicas of dense:4096 over simulated 1 Gbit/s (50 us) against 1: 0.50x bare, "
                                    "1.50x accumulate 8, 0.75x bf16 all-reduce (below 1x: slower than one)"));
    const std::string text = sweep_text(s);
    QVERIFY2(text.find("accumulate 8        2      4.00     1.50x   70.00%   <- best") != std::string::npos, text.c_str());
    QCOMPARE(to_json(s).at("configurations").at(3).at("remedy").get<std::string>(), std::string("bf16 all-reduce"));

    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_remedies("bf16, gzip"); }, {"--remedies", "gzip"}));
    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_remedies("accumulate:0"); }, {"--accumulate"}));
    o.remedies = parse_sweep_remedies("bf16, bf16");
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {"--remedies", "bf16 all-reduce", "twice"}));
    o.remedies = parse_sweep_remedies("none");
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {"--remedies", "always swept"}));
  }

  // The input pipeline's remedies on the same axis: how many loaders does this input cost
  // need? The base's cost and its own loaders stay in every run (the bare one included); each
  // remedy replaces the loaders or the prefetch depth. Without an input cost they are refused.
  void a_loader_sweep_varies_the_input_pipeline() {
    SweepOptions o;
    o.axis = SweepAxis::Remedy;
    o.base.devices = cpu_replicas(2);
    o.base.scenario.input.latency_ms = 0.5;
    o.base.scenario.input.loaders = 1;
    o.remedies = parse_sweep_remedies("loaders:2, loaders:8+prefetch:8, prefetch:4");
    QCOMPARE(sweep_remedies_text(o.remedies), std::string("loaders:2, loaders:8+prefetch:8, prefetch:4"));
    const auto points = sweep_points(o);
    QCOMPARE(points.size(), std::size_t(5));   // one replica, bare, three remedies
    QVERIFY(!is_sweep_remedy(points[1].remedy) && is_sweep_remedy(points[2].remedy));
    QCOMPARE(remedy_name(points[3].remedy), std::string("8 loaders, prefetch 8"));
    QCOMPARE(short_remedy_name(points[3].remedy), std::string("8 ldr+pf 8"));
    const auto plan = make_sweep_plan(o);
    for (const PlannedRun& p : plan) QCOMPARE(p.config.scenario.input.latency_ms, 0.5);
    QCOMPARE(plan[1].config.scenario.input.loaders, 1);   // bare: the base's own
    QCOMPARE(plan[1].config.scenario.input.prefetch, 2);
    QCOMPARE(plan[2].config.scenario.input.loaders, 2);
    QVERIFY(plan[3].config.scenario.input.loaders == 8 && plan[3].config.scenario.input.prefetch == 8);
    QVERIFY(plan[4].config.scenario.input.loaders == 1 && plan[4].config.scenario.input.prefetch == 4);
    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_remedies("loaders:0"); }, {"--remedies", "at least 1"}));
    o.base.scenario.input = {};
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); },
                                            {"--remedies", "2 loaders", "--input-latency or --input-cpu"}));
  }

  void impossible_model_and_link_sweeps_are_refused() {
    SweepOptions o;
    o.axis = SweepAxis::Model;
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {"at least 2 devices", "cpu:1"}));
    o.base.devices = cpu_replicas(2);
    o.models = {ModelSpec{}, ModelSpec{}};
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {"--models", "reference", "twice"}));
    o.axis = SweepAxis::Link;
    o.links = {};
    QVERIFY(test::expect_error<ConfigError>([&] { sweep_points(o); }, {"--links", "at least one"}));
    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_links("off, fast"); }, {"--links", "fast"}));
    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_models("reference, dense:99999"); }, {"--models", "dense:99999"}));
    QVERIFY(test::expect_error<ConfigError>([&] { parse_sweep_models(" , "); }, {"--models", "at least one"}));
    // Under mpirun the replica counts would be per process: refused, naming why.
    PlanRequest r;
    r.kind = PlanKind::Sweep;
    r.config.devices = cpu_replicas(2);
    r.sweep.axis = SweepAxis::Model;
    r.processes = 2;
    QVERIFY(test::expect_error<ConfigError>([&] { make_plan(r); }, {"one process", "2 processes"}));
  }

  void the_lists_read_as_typed_and_write_back() {
    const auto models = parse_sweep_models("reference, dense:1024 dense:4096");
    QCOMPARE(models.size(), std::size_t(3));
    QVERIFY(models[2] == reference_family(4096));
    QCOMPARE(sweep_models_text(models), std::string("reference, dense:1024, dense:4096"));
    const auto links = parse_sweep_links("off,100:3,1");
    QCOMPARE(links.size(), std::size_t(3));
    QVERIFY(links[1] == (SimulatedLink{100, 3}));
    QCOMPARE(sweep_links_text(links), std::string("off, 100:3, 1"));
    QVERIFY(parse_sweep_links(sweep_links_text(SweepOptions{}.links)) == SweepOptions{}.links);
  }

  void speedups_are_over_one_replica_of_the_same_model() {
    SweepOptions o;
    o.axis = SweepAxis::Model;
    o.base.devices = cpu_replicas(2);
    o.models = {ModelSpec{}, reference_family(4096)};
    const auto points = sweep_points(o);   // reference x1, x2; dense4096 x1, x2
    const std::vector<RunRecord> runs{history("r1", {{4.0, 0.8}}), history("r2", {{2.5, 0.8}}),
                                      history("d1", {{8.0, 0.8}}), history("d2", {{10.0, 0.8}})};
    const SweepSummary s = summarize_sweep(points, runs, 0.85, SweepAxis::Model);
    QVERIFY(!s.results[0].speedup && !s.results[2].speedup);
    QCOMPARE(*s.results[1].speedup, 1.6);    // 4.0 / 2.5
    QCOMPARE(*s.results[3].speedup, 0.8);    // 8.0 / 10.0: slower than one
    QCOMPARE(s.best, 1);
    QCOMPARE(s.verdict, std::string("2 replicas against 1: 1.60x with reference, 0.80x with dense:4096 "
                                    "(below 1x: slower than one)"));
    const nlohmann::json j = to_json(s);
    QCOMPARE(j.at("axis").get<std::string>(), std::string("model"));
    QCOMPARE(j.at("configurations").at(3).at("speedup").get<double>(), 0.8);
    QCOMPARE(j.at("configurations").at(3).at("model").get<std::string>(), std::string("dense:4096"));
    QVERIFY(j.at("configurations").at(2).at("speedup").is_null());
    const QString csv = QString::fromStdString(sweep_csv(s));
    QVERIFY(csv.startsWith("global_batch,scale_lr,lr,run_id,status,epoch_s,val_acc,time_to_target_s,epochs_to_target,"
                           "best,model,replicas,simulated_link_gbit,simulated_link_latency_us,speedup,remedy\n"));
    QVERIFY2(csv.contains(",dense:4096,2,0,0,0.8,\"bare\"\n"), qPrintable(csv));
    QVERIFY(QString::fromStdString(sweep_text(s)).contains("0.80x"));
    // A stopped sweep: the second model's multi-replica run missing, no speed-up for it.
    const SweepSummary part = summarize_sweep(points, {runs[0], runs[1], runs[2]}, 0.85, SweepAxis::Model);
    QCOMPARE(part.verdict, std::string("2 replicas against 1: 1.60x with reference"));
    const SweepSummary none = summarize_sweep(points, {runs[0]}, 0.85, SweepAxis::Model);
    QCOMPARE(none.best, -1);
  }

  void a_link_sweeps_verdict_names_the_links() {
    SweepOptions o;
    o.axis = SweepAxis::Link;
    o.base.devices = cpu_replicas(2);
    o.base.model = reference_family(4096);
    o.links = {{0, 0}, {1, 50}};
    const auto points = sweep_points(o);
    const SweepSummary s = summarize_sweep(
        points, {history("one", {{6.0, 0.8}}), history("own", {{4.0, 0.8}}), history("slow", {{12.0, 0.8}})}, 0.85,
        SweepAxis::Link);
    QCOMPARE(*s.results[1].speedup, 1.5);
    QCOMPARE(*s.results[2].speedup, 0.5);
    QCOMPARE(s.best, 1);
    QCOMPARE(s.verdict, std::string("2 replicas of dense:4096 against 1: 1.50x over this machine's exchange, 0.50x "
                                    "over 1 Gbit/s (below 1x: slower than one)"));
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

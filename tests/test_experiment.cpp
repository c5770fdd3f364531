// Tests of core/experiment, the decisions the GUI and the CLI share: which run is a run's
// baseline (pins, most recent completed, every field of the key), the classic task's verdict
// at its thresholds, the plans, the run store with a history written by the GUI, and what
// differs between two runs (every option the record keeps, in words).
#include <QtTest>

#include <functional>

#include "experiment/baseline.h"
#include "model/model_text.h"
#include "experiment/comparison_report.h"
#include "experiment/diagnosis.h"
#include "backends/registry.h"
#include "config/train_options.h"
#include "experiment/plan_executor.h"
#include "experiment/planner.h"
#include "experiment/run_differences.h"
#include "experiment/run_store.h"
#include "experiment/verdict.h"
#include "records/run_record.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;
namespace fs = std::filesystem;

namespace {

// A finished run with one epoch of `time_s` seconds and final validation accuracy `val_acc`.
RunRecord made_run(const std::string& id, int replicas, const std::string& start, double time_s = 2.0,
                   double val_acc = 0.85) {
  RunRecord r;
  r.id = id;
  RunConfig& c = r.config;
  c.devices = cpu_replicas(replicas);
  c.replicas = replicas;
  c.global_batch = 128;
  c.per_replica_batch = 128 / replicas;
  c.epochs = 1;
  c.dataset = "fashion-mnist";
  c.train_size = 60000;
  c.val_size = 10000;
  c.backend = Backend::OneDnn;
  c.start_time = start;
  r.epochs.push_back(EpochMetrics{1, time_s, 0.0, 0.5, 0.8, 0.5, val_acc, 60000 / time_s, {}, {}});
  return r;
}

// The classic task's settings on `replicas` CPU replicas.
RunRecord classic_run(const std::string& id, int replicas, double time_s, double val_acc) {
  RunRecord r = made_run(id, replicas, "2026-01-01T00:00:00Z", time_s, val_acc);
  r.config.epochs = ClassicTask::kEpochs;
  r.epochs.clear();
  for (int e = 1; e <= ClassicTask::kEpochs; ++e)
    r.epochs.push_back(EpochMetrics{e, time_s, 0.0, 0.5, 0.8, 0.5, val_acc, 60000 / time_s, {}, {}});
  return r;
}

const RunRecord* by_id(const std::vector<RunRecord>& runs, const std::string& id) {
  for (const auto& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

std::string id_of(const RunRecord* r) { return r ? r->id : std::string("(none)"); }

using Mutation = std::function<void(RunConfig&)>;

// A trainer that trains nothing: every planned run ends at once as a completed record with
// one epoch of the next of `epoch_s` (in plan order) seconds, at the next second of a clock.
class TimedTrainer : public RunTrainer {
 public:
  explicit TimedTrainer(std::vector<double> epoch_s) : epoch_s_(std::move(epoch_s)) {}
  RunRecord train(const PlannedRun& run, const RunCallbacks&, const std::filesystem::path&) override {
    RunRecord r = made_run("", int(run.config.devices.size()), fmt::format("2026-01-01T00:00:{:02}Z", next_),
                           epoch_s_.at(std::size_t(next_)));
    r.id = fmt::format("run{}", next_++);
    return r;
  }
  void request_stop() override {}
  void clear_stop() override {}

 private:
  std::vector<double> epoch_s_;
  int next_ = 0;
};

}  // namespace

Q_DECLARE_METATYPE(Mutation)

class TestExperiment : public QObject {
  Q_OBJECT

 private slots:
  void key_fields_data();
  void key_fields();
  void per_replica_mode_compares_the_per_replica_batch();
  void baseline_is_the_latest_completed_single_device_run();
  void pins_win_while_their_run_exists();
  void index_agrees_with_a_single_lookup();
  void verdict_thresholds_data();
  void verdict_thresholds();
  void verdict_uses_the_final_accuracy_not_the_best();
  void classic_task_differences_name_the_setting_data();
  void classic_task_differences_name_the_setting();
  void plans_data();
  void plans();
  void plans_refuse();
  void reference_config_presets_the_classic_task();
  void baseline_device_data();
  void baseline_device();
  void store_reads_a_history_written_by_the_gui();
  void store_round_trip_skips_what_it_cannot_read();
  void comparison_text_without_a_baseline();
  void a_run_keeps_the_baseline_it_was_compared_with();
  void diagnosis_names_the_cause();
  void run_differences_name_the_setting_data();
  void run_differences_name_the_setting();
  void run_differences_read_alike_values_apart();
  void run_differences_leave_out_what_no_user_chose();
  void every_option_the_record_keeps_is_compared();
  void distinguishing_words_name_each_run();
};

// Every field of the key: a single-device run that differs in it is not the baseline; fields
// outside the key (epochs, learning rate, seed, validation size, replicas) do not matter.
void TestExperiment::key_fields_data() {
  QTest::addColumn<Mutation>("mutate");   // applied to the candidate baseline's configuration
  QTest::addColumn<bool>("in_key");
  QTest::newRow("dataset") << Mutation([](RunConfig& c) { c.dataset = "mnist"; }) << true;
  QTest::newRow("train_size") << Mutation([](RunConfig& c) { c.train_size = 2048; }) << true;
  QTest::newRow("model") << Mutation([](RunConfig& c) { c.model = reference_family(100); }) << true;
  QTest::newRow("global batch") << Mutation([](RunConfig& c) { c.global_batch = c.per_replica_batch = 256; }) << true;
  QTest::newRow("device kind") << Mutation([](RunConfig& c) { c.devices = parse_devices("cuda:0"); c.backend = Backend::OneDnn; }) << true;
  QTest::newRow("backend") << Mutation([](RunConfig& c) { c.backend = Backend::Reference; }) << true;
  QTest::newRow("epochs") << Mutation([](RunConfig& c) { c.epochs = 9; }) << false;
  QTest::newRow("learning rate") << Mutation([](RunConfig& c) { c.learning_rate = 0.01; }) << false;
  QTest::newRow("seed") << Mutation([](RunConfig& c) { c.seed = 99; }) << false;
  QTest::newRow("val_size") << Mutation([](RunConfig& c) { c.val_size = 100; }) << false;
  QTest::newRow("which cpu") << Mutation([](RunConfig& c) { c.cpu_model = "other"; }) << false;
}

void TestExperiment::key_fields() {
  QFETCH(Mutation, mutate);
  QFETCH(bool, in_key);
  const RunRecord run = made_run("multi", 2, "2026-01-01T00:01:00Z");
  std::vector<RunRecord> runs{made_run("single", 1, "2026-01-01T00:00:00Z"), run};
  mutate(runs[0].config);
  QCOMPARE(baseline_key(runs[0].config) == baseline_key(run.config), !in_key);
  QCOMPARE(id_of(find_baseline(runs, {}, run.config)), in_key ? std::string("(none)") : std::string("single"));
}

// Weak scaling: in per-replica mode the baseline is the single-device run whose batch is the
// per-replica batch, not the (larger) global batch.
void TestExperiment::per_replica_mode_compares_the_per_replica_batch() {
  RunRecord run = made_run("multi", 2, "2026-01-01T00:02:00Z");
  run.config.per_replica_batch_mode = true;
  run.config.per_replica_batch = 128;
  run.config.global_batch = 256;
  RunRecord big = made_run("b256", 1, "2026-01-01T00:01:00Z");
  big.config.global_batch = big.config.per_replica_batch = 256;
  const std::vector<RunRecord> runs{made_run("b128", 1, "2026-01-01T00:00:00Z"), big, run};
  QCOMPARE(id_of(find_baseline(runs, {}, run.config)), std::string("b128"));
  QVERIFY(describe_baseline_key(run.config).find("batch 128") != std::string::npos);
}

void TestExperiment::baseline_is_the_latest_completed_single_device_run() {
  std::vector<RunRecord> runs{made_run("old", 1, "2026-01-01T00:00:00Z"), made_run("new", 1, "2026-01-01T00:01:00Z"),
                              made_run("multi", 2, "2026-01-01T00:05:00Z")};
  RunRecord stopped = made_run("stopped", 1, "2026-01-01T00:02:00Z");
  stopped.status = RunStatus::Stopped;
  RunRecord failed = made_run("failed", 1, "2026-01-01T00:03:00Z");
  failed.status = RunStatus::Failed;
  RunRecord empty = made_run("no-epochs", 1, "2026-01-01T00:04:00Z");
  empty.epochs.clear();
  RunRecord paced = made_run("teaching-pace", 1, "2026-01-01T00:04:30Z");   // mostly waiting on purpose
  paced.config.step_delay_s = 1;
  RunRecord straggler = made_run("straggler", 1, "2026-01-01T00:04:30Z");   // a demonstration
  straggler.config.scenario.straggler.replica = 0;
  straggler.config.scenario.straggler.factor = 2;
  RunRecord linked = made_run("simulated-link", 1, "2026-01-01T00:04:40Z");   // a demonstration too
  linked.config.scenario.link.gbit = 1;
  for (const RunRecord& r : {stopped, failed, empty, paced, straggler, linked}) {
    QVERIFY(!can_be_baseline(r));
    runs.push_back(r);
  }
  QVERIFY(!can_be_baseline(runs[2]));   // two replicas
  QCOMPARE(id_of(find_baseline(runs, {}, runs[2].config)), std::string("new"));
  // Listed out of order: the start time decides, not the position.
  std::swap(runs[0], runs[1]);
  QCOMPARE(id_of(find_baseline(runs, {}, runs[2].config)), std::string("new"));
  // The same start time: the later in the list wins.
  runs.push_back(made_run("same-time", 1, "2026-01-01T00:01:00Z"));
  QCOMPARE(id_of(find_baseline(runs, {}, runs[2].config)), std::string("same-time"));
}

void TestExperiment::pins_win_while_their_run_exists() {
  std::vector<RunRecord> runs{made_run("old", 1, "2026-01-01T00:00:00Z"), made_run("new", 1, "2026-01-01T00:01:00Z"),
                              made_run("multi", 2, "2026-01-01T00:02:00Z")};
  const std::string key = baseline_key(runs[2].config);
  QCOMPARE(id_of(find_baseline(runs, BaselineBook{{{key, "old"}}, {}}, runs[2].config)), std::string("old"));
  // Any run can be pinned, as the GUI's "Pin as baseline" allows.
  QCOMPARE(id_of(find_baseline(runs, BaselineBook{{{key, "multi"}}, {}}, runs[2].config)), std::string("multi"));
  // A balanced run is never the baseline of a lock-step one, not even pinned.
  runs.push_back(made_run("balanced", 2, "2026-01-01T00:03:00Z"));
  runs.back().config.scenario.balance = true;
  QVERIFY(!can_be_baseline(runs.back()));
  QCOMPARE(id_of(find_baseline(runs, BaselineBook{{{key, "balanced"}}, {}}, runs[2].config)), std::string("new"));
  // A pin whose run is gone, or a pin of another key, changes nothing.
  QCOMPARE(id_of(find_baseline(runs, BaselineBook{{{key, "deleted"}}, {}}, runs[2].config)), std::string("new"));
  QCOMPARE(id_of(find_baseline(runs, BaselineBook{{{"mnist|1|x|1|cpu|onednn", "old"}}, {}}, runs[2].config)), std::string("new"));
  // The pins file format: the key's text is stored, so it must stay as it was written.
  QCOMPARE(key, std::string("fashion-mnist|60000|conv32-pool-conv64-pool-dense64-dense10|128|cpu|onednn"));
}

void TestExperiment::index_agrees_with_a_single_lookup() {
  std::vector<RunRecord> runs{made_run("a1", 1, "2026-01-01T00:00:00Z"), made_run("m2", 2, "2026-01-01T00:01:00Z"),
                              made_run("a2", 1, "2026-01-01T00:02:00Z"), made_run("m4", 4, "2026-01-01T00:03:00Z")};
  RunRecord other = made_run("b256", 1, "2026-01-01T00:04:00Z");
  other.config.global_batch = other.config.per_replica_batch = 256;
  runs.push_back(other);
  RunRecord lonely = made_run("m256", 2, "2026-01-01T00:05:00Z");
  lonely.config.train_size = 512;
  runs.push_back(lonely);
  for (const BaselinePins& pins : {BaselinePins{}, BaselinePins{{baseline_key(runs[0].config), "a1"}}}) {
    const BaselineBook book{pins, {}};
    const BaselineIndex index = index_baselines(runs, book);
    QCOMPARE(index.of_run.size(), runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const RunRecord* single = find_baseline(runs, book, runs[i].config);
      const std::optional<std::size_t> b = index.of_run[i];
      QCOMPARE(id_of(b ? &runs[*b] : nullptr), id_of(single));
      QCOMPARE(index.is_baseline(i), single == &runs[i]);
      QCOMPARE(index.for_config(runs[i].config), b);
    }
  }
  const BaselineIndex index = index_baselines(runs, {});
  QCOMPARE(index.of_run[1], std::optional<std::size_t>(2));   // m2 -> the newer a2
  QCOMPARE(index.of_run[5], std::optional<std::size_t>());    // nothing with 512 images
  QVERIFY(index.is_baseline(4));                              // b256 is its own key's baseline
}

// Time per epoch down by at least 40 % (exactly 40 % passes); final validation accuracy
// strictly above 80 % (exactly 80 % fails).
void TestExperiment::verdict_thresholds_data() {
  QTest::addColumn<double>("baseline_s");
  QTest::addColumn<double>("run_s");
  QTest::addColumn<double>("val_acc");
  QTest::addColumn<bool>("time_ok");
  QTest::addColumn<bool>("acc_ok");
  QTest::newRow("exactly 40 %, exactly 80 %") << 10.0 << 6.0 << 0.80 << true << false;
  QTest::newRow("just under 40 %") << 10.0 << 6.001 << 0.85 << false << true;
  QTest::newRow("just above 80 %") << 10.0 << 5.0 << 0.8000001 << true << true;
  QTest::newRow("just below 80 %") << 10.0 << 5.0 << 0.7999999 << true << false;
  QTest::newRow("slower") << 10.0 << 12.0 << 0.9 << false << true;
  QTest::newRow("no epoch time") << 10.0 << 0.0 << 0.9 << false << true;
}

void TestExperiment::verdict_thresholds() {
  QFETCH(double, baseline_s);
  QFETCH(double, run_s);
  QFETCH(double, val_acc);
  QFETCH(bool, time_ok);
  QFETCH(bool, acc_ok);
  const RunRecord base = classic_run("base", 1, baseline_s, 0.85);
  const RunRecord run = classic_run("run", 2, run_s, val_acc);
  const ReferenceVerdict v = judge_reference(base, run);
  QCOMPARE(v.time_ok, time_ok);
  QCOMPARE(v.acc_ok, acc_ok);
  QCOMPARE(v.passed(), time_ok && acc_ok);
  QCOMPARE(v.val_acc, val_acc);
  QVERIFY(v.is_classic_task());
  QCOMPARE(v.time.has_value(), run_s > 0);
  if (v.time) {
    QCOMPARE(v.time->baseline_s, baseline_s);
    QCOMPARE(v.time->run_s, run_s);
    QCOMPARE(v.time->speedup, baseline_s / run_s);
    QCOMPARE(v.time->reduction, 1.0 - run_s / baseline_s);
  }
}

void TestExperiment::verdict_uses_the_final_accuracy_not_the_best() {
  const RunRecord base = classic_run("base", 1, 10, 0.85);
  RunRecord run = classic_run("run", 2, 5, 0.85);
  run.epochs.back().val_acc = 0.79;   // the trained model got worse in its last epoch
  const ReferenceVerdict v = judge_reference(base, run);
  QCOMPARE(v.val_acc, 0.79);
  QVERIFY(!v.acc_ok);
  QVERIFY(run.best_val_acc() > ReferenceVerdict::kMinValAcc);
}

void TestExperiment::classic_task_differences_name_the_setting_data() {
  QTest::addColumn<Mutation>("mutate");
  QTest::addColumn<QString>("text");   // empty: the classic task
  QTest::newRow("classic") << Mutation([](RunConfig&) {}) << "";
  QTest::newRow("model") << Mutation([](RunConfig& c) { c.model = reference_family(100); }) << "model dense:100";
  QTest::newRow("one epoch") << Mutation([](RunConfig& c) { c.epochs = 1; }) << "1 epoch";
  QTest::newRow("epochs") << Mutation([](RunConfig& c) { c.epochs = 12; }) << "12 epochs";
  QTest::newRow("batch") << Mutation([](RunConfig& c) { c.global_batch = 1024; }) << "global batch 1,024";
  QTest::newRow("scaled lr") << Mutation([](RunConfig& c) { c.learning_rate = 0.002; }) << "learning rate 0.002";
  QTest::newRow("train images") << Mutation([](RunConfig& c) { c.train_size = 2048; }) << "2,048 training images";
  QTest::newRow("one train image") << Mutation([](RunConfig& c) { c.train_size = 1; }) << "1 training image";
  QTest::newRow("val images") << Mutation([](RunConfig& c) { c.val_size = 1000; }) << "1,000 validation images";
  QTest::newRow("two at once") << Mutation([](RunConfig& c) { c.epochs = 1; c.train_size = 1234567; })
                               << "1 epoch, 1,234,567 training images";
}

void TestExperiment::classic_task_differences_name_the_setting() {
  QFETCH(Mutation, mutate);
  QFETCH(QString, text);
  RunConfig c = classic_run("run", 2, 5, 0.9).config;
  mutate(c);
  std::string joined;
  for (const auto& d : classic_task_differences(c)) joined += (joined.empty() ? "" : ", ") + d;
  QCOMPARE(QString::fromStdString(joined), text);
}

void TestExperiment::plans_data() {
  QTest::addColumn<int>("kind");
  QTest::addColumn<QString>("devices");
  QTest::addColumn<QString>("single");
  QTest::newRow("run") << int(PlanKind::Single) << "cpu:2" << "cpu:1";
  QTest::newRow("compare cpu") << int(PlanKind::Compare) << "cpu:4" << "cpu:1";
  QTest::newRow("compare gpus") << int(PlanKind::Compare) << "cuda:1,cuda:2" << "cuda:1";
  QTest::newRow("reference") << int(PlanKind::Reference) << "cpu:2" << "cpu:1";
  QTest::newRow("lock-step vs balanced") << int(PlanKind::Balance) << "cpu:2" << "cpu:2";
  QTest::newRow("bare vs remedy") << int(PlanKind::Remedy) << "cpu:2" << "cpu:2";
}

void TestExperiment::plans() {
  QFETCH(int, kind);
  QFETCH(QString, devices);
  QFETCH(QString, single);
  TrainConfig config;
  config.devices = parse_devices(devices.toStdString());
  if (device_kind(config.devices) == DeviceKind::Cuda && !backend_info(Backend::Cuda).built())
    QSKIP("this build has no CUDA backend: a GPU plan is refused (see plans_refuse)");
  config.batch = 64;
  config.per_replica_batch = true;
  config.seed = 5;
  if (device_kind(config.devices) == DeviceKind::Cpu) {
    config.scenario.straggler.replica = 1;   // a simulated straggler: the run's, never the baseline's
    config.scenario.straggler.factor = 3;
    config.scenario.link.gbit = 10;     // a simulated link: the run's too
  }
  config.model = reference_family(1024);   // a what-if model: every run's, but not the reference experiment's
  if (PlanKind(kind) == PlanKind::Remedy) config.scenario.accumulate = 8, config.scenario.allreduce_dtype = WireDtype::Bf16;
  config.step_delay_s = 1;     // teaching pace: for Run only
  const Plan made = make_plan(PlanRequest{PlanKind(kind), config, 1, {}, {}});
  const std::vector<PlannedRun>& plan = made.runs;
  QCOMPARE(made.kind, PlanKind(kind));
  if (PlanKind(kind) == PlanKind::Single) {
    QCOMPARE(plan.size(), std::size_t(1));
    QCOMPARE(plan[0].role, RunRole::Run);
    QCOMPARE(QString::fromStdString(format_devices(plan[0].config.devices)), devices);
    QCOMPARE(plan[0].config.step_delay_s, 1.0);
    return;
  }
  QCOMPARE(plan.size(), std::size_t(2));
  QVERIFY(!made.notes.empty());   // says the pace was turned off
  if (PlanKind(kind) == PlanKind::Balance) {
    // The straggler demonstration: the same run twice, lock-step then balanced, straggler kept.
    for (const PlannedRun& p : plan) {
      QCOMPARE(p.role, RunRole::Run);
      QCOMPARE(QString::fromStdString(format_devices(p.config.devices)), devices);
      QCOMPARE(p.config.scenario.straggler.replica, 1);
      QCOMPARE(p.config.step_delay_s, 0.0);
    }
    QVERIFY(!plan[0].config.scenario.balance && plan[1].config.scenario.balance);
    QCOMPARE(QString::fromUtf8(to_string(PlanKind::Balance)), QString("Lock-step vs balanced"));
    return;
  }
  if (PlanKind(kind) == PlanKind::Remedy) {
    // The remedy's demonstration: the same run twice, bare then accumulating, link kept.
    for (const PlannedRun& p : plan) {
      QCOMPARE(p.role, RunRole::Run);
      QCOMPARE(p.config.scenario.link.gbit, 10.0);
      QCOMPARE(p.config.step_delay_s, 0.0);
    }
    QCOMPARE(plan[0].config.scenario.accumulate, 1);
    QCOMPARE(plan[1].config.scenario.accumulate, 8);
    QVERIFY(plan[0].config.scenario.allreduce_dtype == WireDtype::Fp32);   // bare: no remedy at all
    QVERIFY(plan[1].config.scenario.allreduce_dtype == WireDtype::Bf16);
    QCOMPARE(plan[0].config.scenario, plan[1].config.scenario.bare());
    QCOMPARE(QString::fromUtf8(to_string(PlanKind::Remedy)), QString("Bare vs remedy"));
    return;
  }
  QCOMPARE(plan[0].role, RunRole::Baseline);
  QCOMPARE(QString::fromStdString(format_devices(plan[0].config.devices)), single);
  QCOMPARE(plan[1].role, RunRole::Run);
  QCOMPARE(QString::fromStdString(format_devices(plan[1].config.devices)), devices);
  if (device_kind(config.devices) == DeviceKind::Cuda) return;
  QCOMPARE(plan[0].config.scenario.straggler.replica, -1);
  QCOMPARE(plan[0].config.scenario.straggler.factor, 1.0);
  QCOMPARE(plan[1].config.scenario.straggler.replica, 1);
  QCOMPARE(plan[1].config.scenario.straggler.factor, 3.0);
  QCOMPARE(plan[0].config.scenario.link.gbit, 0.0);
  QCOMPARE(plan[1].config.scenario.link.gbit, 10.0);
  const int width = PlanKind(kind) == PlanKind::Reference ? 64 : 1024;
  for (const PlannedRun& p : plan) QCOMPARE(reference_family_width(p.config.model).value_or(0), width);
  for (const PlannedRun& p : plan) {   // only the devices differ: the same work per device
    QCOMPARE(p.config.batch, int64_t(64));
    QVERIFY(p.config.per_replica_batch);
    QCOMPARE(p.config.seed, uint64_t(5));
    QCOMPARE(p.config.step_delay_s, 0.0);
  }
  QCOMPARE(QString::fromUtf8(to_string(PlanKind(kind))), PlanKind(kind) == PlanKind::Compare
                                                             ? QString("Compare")
                                                             : QString("Reference experiment"));
}

// The plan rules are the core's: both front ends get the same refusals, before any training.
void TestExperiment::plans_refuse() {
  const TrainConfig one;   // cpu:1
  auto plan = [](PlanKind kind, const TrainConfig& c, int processes = 1, SweepOptions sweep = {}) {
    return make_plan(PlanRequest{kind, c, processes, {}, std::move(sweep)});
  };
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Compare, one); }, "baseline's own device"));
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Reference, one); }, "two or more devices"));
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Balance, one); }, "two or more replicas"));
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Remedy, one); }, "choose a remedy"));
  TrainConfig one_remedy = one;
  one_remedy.scenario.accumulate = 4;
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Remedy, one_remedy); }, "two or more replicas"));
  TrainConfig compressed;
  compressed.devices = cpu_replicas(2);
  compressed.scenario.allreduce_dtype = WireDtype::Fp16;   // compression alone is a remedy too
  QCOMPARE(plan(PlanKind::Remedy, compressed).runs.size(), std::size_t(2));
  QCOMPARE(plan(PlanKind::Compare, one, 2).runs.size(), std::size_t(2));   // 2 processes x cpu:1 against cpu:1
  QCOMPARE(plan(PlanKind::Compare, one, 2).runs[0].processes, 1);          // the baseline in one process
  TrainConfig four;
  four.devices = cpu_replicas(4);
  four.batch = 2;
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Single, four); }, "smaller than the 4 replicas"));
  // A sweep checks every configuration first: batch 2 cannot be split over 4 replicas.
  four.batch = 64;
  SweepOptions sweep;
  sweep.batches = {2, 64};
  QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Sweep, four, 1, sweep); }, "run 1 of 4: global batch 2"));
  sweep.batches = {8, 64};
  QCOMPARE(plan(PlanKind::Sweep, four, 1, sweep).runs.size(), std::size_t(4));   // each with and without scaling
  TrainConfig gpus;
  gpus.devices = parse_devices("cuda:0,cuda:1");
  if (!backend_info(Backend::Cuda).built())
    QVERIFY(test::expect_error<ConfigError>([&] { plan(PlanKind::Compare, gpus); }, "without CUDA"));
}

void TestExperiment::reference_config_presets_the_classic_task() {
  TrainConfig c;
  c.data_dir = "/data/mine";
  c.epochs = 1;
  c.batch = 32;
  c.per_replica_batch = true;
  c.lr = 0.01;
  c.scale_lr = true;
  c.limit_train = 2048;
  c.limit_val = 100;
  c.seed = 9;
  c.backend = Backend::Reference;
  const TrainConfig r = reference_config(c, cpu_replicas(2));
  QCOMPARE(r.devices, cpu_replicas(2));
  QCOMPARE(r.epochs, ClassicTask::kEpochs);
  QCOMPARE(r.batch, ClassicTask::kGlobalBatch);
  QVERIFY(!r.per_replica_batch);
  QCOMPARE(r.lr, ClassicTask::kLearningRate);
  QVERIFY(!r.scale_lr);
  QCOMPARE(r.limit_train, int64_t(0));
  QCOMPARE(r.limit_val, int64_t(0));
  // Not part of the task: kept.
  QCOMPARE(r.data_dir, c.data_dir);
  QCOMPARE(r.seed, c.seed);
  QCOMPARE(r.backend, c.backend);
}

void TestExperiment::baseline_device_data() {
  QTest::addColumn<QString>("devices");
  QTest::addColumn<QString>("single");
  QTest::newRow("cpu replicas") << "cpu:4" << "cpu:1";
  QTest::newRow("cpu") << "cpu" << "cpu:1";
  QTest::newRow("two gpus") << "cuda:1,cuda:2" << "cuda:1";
  QTest::newRow("one gpu shared") << "cuda:0,cuda:0" << "cuda:0";
  QTest::newRow("one gpu") << "cuda:3" << "cuda:3";
}

void TestExperiment::baseline_device() {
  QFETCH(QString, devices);
  QFETCH(QString, single);
  QCOMPARE(QString::fromStdString(format_devices(baseline_devices(parse_devices(devices.toStdString())))), single);
}

// tests/data/history_v1: the folder the GUI wrote at commit 63f8157 for `--run cpu:2` then
// `--compare cpu:2` (1 epoch, 2,048 training images), with the compare baseline pinned.
void TestExperiment::store_reads_a_history_written_by_the_gui() {
  const RunStore store(fs::path(MB_TEST_DATA_DIR) / "history_v1");
  RunStore::Loaded loaded = store.load_runs();
  QVERIFY(loaded.warnings.empty());
  QCOMPARE(loaded.runs.size(), std::size_t(3));
  QCOMPARE(loaded.runs.front().id, std::string("20261201T082916Z-cpu2-3737"));   // oldest first
  const BaselineBook book = store.load_book(&loaded.warnings);   // written before comparisons were kept
  QVERIFY(loaded.warnings.empty());
  QCOMPARE(book.pins.size(), std::size_t(1));
  QVERIFY(book.compared.empty());
  const RunRecord& run = loaded.runs.back();
  QCOMPARE(run.id, std::string("20261201T082924Z-cpu2-5986"));

  std::vector<std::string> warnings;
  const RunComparison c = compare_with_baseline(store, run, &warnings);
  QVERIFY(warnings.empty());
  QVERIFY(c.baseline);
  QCOMPARE(c.baseline->id, std::string("20261201T082922Z-cpu1-9933"));
  QVERIFY(!c.run_is_baseline);
  QVERIFY(c.time && c.verdict);
  const RunRecord& base = *by_id(loaded.runs, c.baseline->id);
  QCOMPARE(c.time->reduction, 1.0 - run.epochs[0].time_s / base.epochs[0].time_s);
  QVERIFY(!c.verdict->time_ok && !c.verdict->acc_ok);
  QCOMPARE(c.verdict->differences, (std::vector<std::string>{"1 epoch", "2,048 training images"}));
  const std::string text = comparison_text(run, c);
  const char* expected[] = {
      "run 20261201T082924Z-cpu2-5986 (cpu:2, completed)\n",
      "baseline 20261201T082922Z-cpu1-9933 (cpu:1, completed) for fashion-mnist (2048 training images), "
      "reference, batch 128, cpu (onednn)\n",
      "mean epoch time 0.49 s -> 0.38 s: -23.9 % (speedup 1.31x)\n",
      "final validation accuracy 57.17 % (baseline 57.17 %)\n",
      "criteria of the classic task (lock-step; these settings differ from it: 1 epoch, 2,048 training images):\n",
      "  time per epoch reduced by >= 40 %: no (-23.9 %)\n",
      "  validation accuracy above 80 %: no (57.17 %)\n",
  };
  for (const char* line : expected) QVERIFY2(text.find(line) != std::string::npos, text.c_str());

  // The same answers from the records alone, and for the older run, which the pin now covers.
  QCOMPARE(compare_with_baseline(loaded.runs, book, run).baseline->id, c.baseline->id);
  const RunComparison older = compare_with_baseline(loaded.runs, book, loaded.runs.front());
  QVERIFY(older.time && older.time->reduction < 0);   // slower than the baseline
  QVERIFY(comparison_text(loaded.runs.front(), older).find(": +7.9 % (speedup 0.93x)") != std::string::npos);
  // The baseline itself is not compared with itself.
  const RunComparison self = compare_with_baseline(loaded.runs, book, base);
  QVERIFY(self.run_is_baseline && !self.time && !self.verdict);
  QVERIFY(comparison_text(base, self).find("this run is the baseline for fashion-mnist") != std::string::npos);
}

void TestExperiment::store_round_trip_skips_what_it_cannot_read() {
  QTemporaryDir tmp;
  QVERIFY(tmp.isValid());
  const RunStore store(fs::path(tmp.path().toStdString()) / "home");
  QVERIFY(store.load_runs().runs.empty());   // no folder yet: an empty history
  QVERIFY(store.load_book() == BaselineBook{});
  const RunRecord a = made_run("a", 1, "2026-01-01T00:01:00Z"), b = made_run("b", 2, "2026-01-01T00:00:00Z");
  store.save(a);
  store.save(b);
  store.save_book({{{baseline_key(a.config), "a"}}, {{"b", "a"}}});
  test::write_bytes(store.runs_dir() / "broken.json", "{\"id\": ");
  test::write_bytes(store.runs_dir() / "notes.txt", "not a record, not a .json file");
  // A run's Chrome trace lies beside its record and is never read as one.
  QCOMPARE(store.trace_file_for("a"), store.runs_dir() / "a.trace.json");
  test::write_bytes(store.trace_file_for("a"), "{\"traceEvents\": []}\n");
  RunStore::Loaded loaded = store.load_runs();
  QCOMPARE(loaded.runs.size(), std::size_t(2));
  QCOMPARE(loaded.runs[0].id, std::string("b"));   // by start time
  QCOMPARE(loaded.warnings.size(), std::size_t(1));
  QVERIFY2(loaded.warnings[0].find("broken.json") != std::string::npos, loaded.warnings[0].c_str());
  QVERIFY(store.load_book() == (BaselineBook{{{baseline_key(a.config), "a"}}, {{"b", "a"}}}));
  store.remove("a");
  QVERIFY(!fs::exists(store.trace_file_for("a")));   // the trace goes with its run
  store.remove("never-existed");   // not an error
  QCOMPARE(store.load_runs().runs.size(), std::size_t(1));
  QVERIFY_THROWS_EXCEPTION(Error, store.file_for("../escape"));
  test::write_bytes(store.root() / "baselines.json", "[1, 2]");
  std::vector<std::string> warnings;
  QVERIFY(store.load_book(&warnings) == BaselineBook{});
  QCOMPARE(warnings.size(), std::size_t(1));
}

// Two Compares of the same configuration: the first run stays measured against the first
// baseline (3 s -> 2 s: 1.5x), not re-scored against the second, slower one (4 s); new runs
// are compared with the newest; the user's pin of the first baseline re-scores the second run.
void TestExperiment::a_run_keeps_the_baseline_it_was_compared_with() {
  QTemporaryDir tmp;
  const RunStore store(fs::path(tmp.path().toStdString()));
  TimedTrainer trainer({3.0, 2.0, 4.0, 2.0});
  PlanExecutor executor(store, trainer);
  PlanRequest request;
  request.kind = PlanKind::Compare;
  request.config.devices = cpu_replicas(2);
  for (int i = 0; i < 2; ++i) QVERIFY(executor.run(make_plan(request), {}).ok);

  const std::vector<RunRecord> runs = store.load_runs().runs;   // run0 (B1), run1, run2 (B2), run3
  QCOMPARE(runs.size(), std::size_t(4));
  BaselineBook book = store.load_book();
  QCOMPARE(book.compared, (ComparedWith{{"run1", "run0"}, {"run3", "run2"}}));
  QCOMPARE(id_of(baseline_of(runs, book, runs[1])), std::string("run0"));
  QCOMPARE(id_of(baseline_of(runs, book, runs[3])), std::string("run2"));
  QCOMPARE(id_of(find_baseline(runs, book, runs[1].config)), std::string("run2"));   // a new run's
  const BaselineIndex index = index_baselines(runs, book);
  QVERIFY(index.kept[1] && index.kept[3]);
  QVERIFY(index.is_baseline(2) && !index.is_baseline(0));
  QCOMPARE(compare_with_baseline(store, runs[1]).time->speedup, 1.5);
  // Deleted, the baseline it was compared with gives way to its configuration's.
  std::vector<RunRecord> without_b1(runs.begin() + 1, runs.end());
  QCOMPARE(id_of(baseline_of(without_b1, book, runs[1])), std::string("run2"));
  // The user pins the first baseline: every run of the configuration is measured against it.
  pin_baseline(book, runs, runs[0]);
  QCOMPARE(id_of(baseline_of(runs, book, runs[3])), std::string("run0"));
  QCOMPARE(id_of(find_baseline(runs, book, runs[3].config)), std::string("run0"));
}

// What bounds a run, from its measurements: each cause on numbers that leave no doubt.
void TestExperiment::diagnosis_names_the_cause() {
  // A run of `replicas` with 100 steps an epoch (12,800 images at 128) and each replica's epoch
  // split as given (seconds): compute is forward 1/3 and backward 2/3 of `compute`.
  auto timed = [](int replicas, double compute, double optimizer, double exchange, double wait, double cpu_share) {
    RunRecord r = made_run("r", replicas, "2026-01-01T00:00:00Z", compute + optimizer + exchange + wait);
    r.config.train_size = 12800;
    r.config.replicas_per_process = replicas;
    for (int k = 0; k < replicas; ++k) {
      PhaseTimes t;
      t[phase::Forward] = compute / 3, t[phase::Backward] = 2 * compute / 3, t[phase::Optimizer] = optimizer;
      t[phase::AllReduce] = exchange, t[phase::Wait] = wait;
      t[phase::ComputeCpu] = (compute + optimizer) * (k == 1 ? cpu_share : 1.0);
      r.epochs[0].replica_times.push_back(t);
    }
    return r;
  };
  // Compute-bound: 86 % computing, nothing deprived.
  Diagnosis d = diagnose(timed(2, 1.6, 0.1, 0.1, 0.17, 1.0), nullptr, nullptr);
  QCOMPARE(int(d.bound), int(Bound::Compute));
  QVERIFY(d.cpu_measured && d.deprived.empty());
  // Replica 1 had its core 60 % of its compute time and replica 0 waits for it: deprived, not slower.
  const RunRecord deprived = timed(2, 1.0, 0.1, 0.1, 0.4, 0.6);
  d = diagnose(deprived, nullptr, nullptr);
  QCOMPARE(int(d.bound), int(Bound::Deprived));
  QCOMPARE(d.deprived.size(), std::size_t(1));
  QCOMPARE(d.deprived[0].replica, 1);
  QVERIFY(std::fabs(d.deprived[0].cpu_share - 0.6) < 1e-12);
  QVERIFY2(diagnosis_text(d, deprived).find("replica 1 had its core 60 %") != std::string::npos,
           diagnosis_text(d, deprived).c_str());
  // The same when replica 1 is the simulated straggler: it sleeps on purpose, so plain waiting.
  RunRecord straggler = deprived;
  straggler.config.scenario.straggler = {1, 3.0};
  d = diagnose(straggler, nullptr, nullptr);
  QCOMPARE(int(d.bound), int(Bound::Waiting));
  QVERIFY(d.deprived.empty());
  // Communication-bound.
  QCOMPARE(int(diagnose(timed(2, 0.5, 0.05, 1.2, 0.05, 1.0), nullptr, nullptr).bound), int(Bound::Communication));
  // A fixed cost per step, from the run and its baseline at two batch sizes: 20 ms a step at 128
  // on one replica, 18 ms at 64 on two: 2 ms per 64 samples, 16 ms whatever the share (10 ms of
  // it the optimizer), 89 % of the run's step.
  RunRecord base = timed(1, 1.9, 0.1, 0.0, 0.0, 1.0);     // (1.9 + 0.1) / 100 steps = 20 ms
  const RunRecord run = timed(2, 0.8, 1.0, 0.05, 0.05, 1.0);   // (0.8 + 1.0) / 100 = 18 ms
  d = diagnose(run, &base, nullptr);
  QCOMPARE(int(d.bound), int(Bound::FixedCost));
  QVERIFY(d.split && std::fabs(d.split->fixed_s - 0.016) < 1e-12 && std::fabs(d.split->optimizer_s - 0.010) < 1e-12);
  QVERIFY(std::fabs(d.split->fixed_share - 16.0 / 18.0) < 1e-12);
  QCOMPARE(d.split->source, std::string("this run and its baseline"));
  const std::string fixed = diagnosis_text(d, run);
  QVERIFY2(fixed.find("89 %") != std::string::npos && fixed.find("optimizer over 121,930 parameters 10.0 ms") != std::string::npos &&
               fixed.find("the rest 6.0 ms") != std::string::npos,
           fixed.c_str());
  // The same from a calibration at the run's concurrency (2 replicas): 10 ms at 32, 12 ms at 64.
  Calibration cal;
  cal.cores = 2;
  cal.gradient_bytes = double(ModelSpec{}.gradient_bytes());
  cal.compute = {{1, 64, 0.005, {}}, {2, 32, 0.010, {}}, {2, 64, 0.012, {}}};
  d = diagnose(run, nullptr, &cal);
  QVERIFY(d.split && std::fabs(d.split->fixed_s - 0.008) < 1e-12);
  QCOMPARE(d.split->source, std::string("the machine's calibration"));
  QVERIFY(std::fabs(d.split->fixed_share - 8.0 / 12.0) < 1e-12);
  // Noise: epochs 30 % apart, a baseline 25 % slower than the one before it.
  RunRecord noisy = timed(2, 1.6, 0.1, 0.1, 0.17, 1.0);
  for (double t : {2.0, 2.0, 2.6}) noisy.epochs.push_back(EpochMetrics{int(noisy.epochs.size()) + 1, t, 0, 0, 0, 0, 0.8, 1, {}, {}});
  RunRecord before = made_run("before", 1, "2025-12-31T00:00:00Z", 2.0);
  base = made_run("base", 1, "2026-01-01T00:00:00Z", 2.5);
  d = diagnose(noisy, &base, nullptr, &before);
  QVERIFY(std::fabs(d.epoch_spread - 0.3) < 1e-9 && d.baseline_drift && std::fabs(*d.baseline_drift - 0.25) < 1e-12);
  QVERIFY2(noise_text(d).find("vary by 30 %") != std::string::npos && noise_text(d).find("25 % slower") != std::string::npos,
           noise_text(d).c_str());
  // One replica: nothing to say.
  QCOMPARE(int(diagnose(timed(1, 1.0, 0.1, 0, 0, 1.0), nullptr, nullptr).bound), int(Bound::None));
}

void TestExperiment::comparison_text_without_a_baseline() {
  const RunRecord run = made_run("lonely", 2, "2026-01-01T00:00:00Z");
  const RunComparison c = compare_with_baseline(std::vector<RunRecord>{run}, {}, run);
  QVERIFY(!c.baseline && !c.time && !c.verdict);
  const std::string text = comparison_text(run, c);
  QVERIFY2(text.find("no single-device baseline for fashion-mnist (60000 training images), reference, batch "
                     "128, cpu (onednn)") != std::string::npos,
           text.c_str());
  // Against a chosen baseline, a single-device run is compared but not judged.
  const RunComparison single = compare_runs(made_run("one", 1, "2026-01-01T00:00:00Z", 2.0),
                                            made_run("other", 1, "2026-01-01T00:01:00Z", 1.0));
  QVERIFY(single.time && !single.verdict);
  QCOMPARE(single.time->reduction, 0.5);
}

void TestExperiment::run_differences_name_the_setting_data() {
  QTest::addColumn<Mutation>("change");
  QTest::addColumn<QString>("setting");
  QTest::addColumn<QString>("before");
  QTest::addColumn<QString>("after");
  auto row = [](const char* name, Mutation m, const char* setting, const char* before, const char* after) {
    QTest::newRow(name) << m << QString(setting) << QString::fromUtf8(before) << QString::fromUtf8(after);
  };
  row("replicas", [](RunConfig& c) { c.devices = cpu_replicas(2), c.replicas = 2; }, "replicas", "1 replica", "2 replicas");
  row("processes", [](RunConfig& c) { c.processes = 2; }, "processes", "1 process", "2 processes");
  row("gpus", [](RunConfig& c) { c.devices = parse_devices("cuda:0"); }, "devices", "CPU", "cuda:0");
  row("model", [](RunConfig& c) { c.model = reference_family(4096); }, "model", "reference", "dense:4096");
  row("batch", [](RunConfig& c) { c.global_batch = 256; }, "batch", "batch 128", "batch 256");
  row("learning rate", [](RunConfig& c) { c.learning_rate = 0.002; }, "learning_rate", "lr 0.001", "lr 0.002");
  row("epochs", [](RunConfig& c) { c.epochs = 3; }, "epochs", "1 epoch", "3 epochs");
  row("data", [](RunConfig& c) { c.dataset = "mnist"; }, "data", "fashion-mnist", "mnist");
  row("training images", [](RunConfig& c) { c.train_size = 4096; }, "train_size", "60,000 images", "4,096 images");
  row("validation images", [](RunConfig& c) { c.val_size = 1000; }, "val_size", "10,000 val images", "1,000 val images");
  row("backend", [](RunConfig& c) { c.backend = Backend::Reference; }, "backend", "onednn", "reference");
  row("precision", [](RunConfig& c) { c.precision = Precision::Tf32; }, "precision", "fp32", "tf32");
  row("straggler", [](RunConfig& c) { c.scenario.straggler = {1, 3}; }, "slow_replica", "", "simulated straggler r1 \u00d73");
  row("link", [](RunConfig& c) { c.scenario.link = {1, 50}; }, "simulated_link", "", "simulated link 1 Gbit/s");
  row("balanced", [](RunConfig& c) { c.scenario.balance = true; }, "balance", "", "balanced shares");
  row("engine", [](RunConfig& c) { c.engine.cpu_conv2 = Conv2Kernel::Onednn; }, "cpu_conv2", "cpu_conv2 own", "cpu_conv2 onednn");
  row("teaching pace", [](RunConfig& c) { c.step_delay_s = 1; }, "pace", "", "teaching pace 1 s");
  row("no breakdown", [](RunConfig& c) { c.time_phases = false; }, "time_phases", "", "no breakdown");
  row("seed", [](RunConfig& c) { c.seed = 7; }, "seed", "seed 1", "seed 7");
}

// One setting changed: one difference, named, with each run's words.
void TestExperiment::run_differences_name_the_setting() {
  QFETCH(Mutation, change);
  QFETCH(QString, setting);
  QFETCH(QString, before);
  QFETCH(QString, after);
  const RunRecord a = made_run("a", 1, "2026-01-01T00:00:00Z");
  RunRecord b = a;
  change(b.config);
  const std::vector<RunDifference> d = run_differences(a.config, b.config);
  QCOMPARE(d.size(), std::size_t(1));
  QCOMPARE(QString::fromStdString(d[0].setting), setting);
  QCOMPARE(QString::fromStdString(d[0].first), before);
  QCOMPARE(QString::fromStdString(d[0].second), after);
  // The other way round, the words swap.
  const std::vector<RunDifference> back = run_differences(b.config, a.config);
  QCOMPARE(back.size(), std::size_t(1));
  QCOMPARE(back[0].first, d[0].second);
}

// Two values that read alike in words (a link's tag has no latency; two data folders of the
// same data set) are told apart by their detail.
void TestExperiment::run_differences_read_alike_values_apart() {
  RunConfig a = made_run("a", 2, "2026-01-01T00:00:00Z").config, b = a;
  a.scenario.link = {10, 25};
  b.scenario.link = {10, 50};
  std::vector<RunDifference> d = run_differences(a, b);
  QCOMPARE(d.size(), std::size_t(1));
  QCOMPARE(d[0], (RunDifference{"simulated_link", "simulated_link 10:25", "simulated_link 10:50"}));
  b = a;
  a.data_dir = "/data/fashion-mnist";
  b.data_dir = "/home/me/fashion-mnist-copy";
  d = run_differences(a, b);
  QCOMPARE(d.size(), std::size_t(1));
  QCOMPARE(d[0], (RunDifference{"data", "data fashion-mnist", "data fashion-mnist-copy"}));
  // Scaling the learning rate with one replica changes nothing; with two it does.
  b = a;
  a.replicas = b.replicas = 1;
  b.scale_lr = true;
  QVERIFY(run_differences(a, b).empty());
  a.replicas = b.replicas = 2;
  b.learning_rate = 0.002;
  d = run_differences(a, b);
  QCOMPARE(d.size(), std::size_t(1));
  QCOMPARE(d[0], (RunDifference{"learning_rate", "lr 0.001", "lr 0.002 scaled"}));
}

// Ids, times, versions and the machine's facts are not settings: the same settings are no
// difference at all.
void TestExperiment::run_differences_leave_out_what_no_user_chose() {
  const RunRecord a = made_run("a", 2, "2026-01-01T00:00:00Z");
  RunConfig b = made_run("b", 2, "2026-02-02T10:00:00Z").config;
  b.version = "other";
  b.cpu_model = "Other CPU";
  b.hosts = {"elsewhere"};
  b.kernels = "Highway avx2";
  b.communicator = "mpi+threads";
  QVERIFY(run_differences(a.config, a.config).empty());
  QVERIFY(run_differences(a.config, b).empty());
}

// Every option the record keeps (the option table's rows, the scenario's and the engines' as
// they come): changed to its example value, the two runs differ, and say so. A new row that
// run_differences missed fails here.
void TestExperiment::every_option_the_record_keeps_is_compared() {
  for (const TrainOption& o : train_options()) {
    if (o.record_keys.empty() || o.example.empty() || !o.resolve) continue;
    TrainConfig base;
    base.devices = cpu_replicas(2);   // balanced shares and their replay need two replicas
    if (!o.example_with.empty()) set_option(train_option(o.example_with), base, train_option(o.example_with).example);
    TrainConfig changed = base;
    set_option(o, changed, o.example);
    auto resolve = [](const TrainConfig& c) {
      RunShape shape;
      shape.replicas = int(c.devices.size());
      shape.dataset = "fashion-mnist";
      shape.data_dir = "/data";
      shape.train_available = 60000;
      shape.val_available = 10000;
      return resolve_options(c, shape);
    };
    const RunConfig a = resolve(base), b = resolve(changed);
    if (a == b) continue;   // what it sets comes from the machine or the data (--data)
    const std::vector<RunDifference> d = run_differences(a, b);
    QVERIFY2(!d.empty(), std::string(o.key).c_str());
    if (o.is_scenario() || o.is_engine()) {
      const bool named = std::any_of(d.begin(), d.end(), [&](const RunDifference& x) { return x.setting == o.key; });
      QVERIFY2(named, std::string(o.key).c_str());
    }
  }
}

void TestExperiment::distinguishing_words_name_each_run() {
  RunConfig base = made_run("base", 1, "2026-01-01T00:00:00Z").config;
  RunConfig two = made_run("two", 2, "2026-01-01T00:00:00Z").config;
  RunConfig tf32 = two;
  tf32.precision = Precision::Tf32;
  const std::vector<const RunConfig*> runs = {&base, &two, &tf32};
  using Words = std::vector<std::vector<std::string>>;
  QCOMPARE(distinguishing_words(runs), (Words{{"1 replica", "fp32"}, {"2 replicas", "fp32"}, {"2 replicas", "tf32"}}));
  // A what-if the runs share is no difference, unless asked for.
  for (RunConfig* c : {&base, &two, &tf32}) c->model = reference_family(4096);
  QCOMPARE(distinguishing_words(runs)[1], (std::vector<std::string>{"2 replicas", "fp32"}));
  QCOMPARE(distinguishing_words(runs, true)[1], (std::vector<std::string>{"2 replicas", "dense:4096", "fp32"}));
  // Runs alike get no words.
  QCOMPARE(distinguishing_words(std::vector<const RunConfig*>{&two, &two}), (Words{{}, {}}));
}

QTEST_GUILESS_MAIN(TestExperiment)
#include "test_experiment.moc"

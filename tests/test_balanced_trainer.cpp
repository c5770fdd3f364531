// Balanced shares in the trainer (--balance, --shares-from): a straggler's share shrinks and
// the replicas stay bit-identical; a replayed record reproduces the run's digests bit for bit;
// even replayed shares are lock-step exactly (each loss still divided by the global batch);
// uneven ones train what one replica trains, an empty share included; bad records are refused
// naming the problem. No timing assertion beyond a 10x straggler's share being the smaller.
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "model/model_text.h"
#include "test_support.h"
#include "trainer_fixtures.h"
#include "trainer/mirrored_trainer.h"
#include "trainer/run_check.h"
#include "util/error.h"

using namespace mb;

namespace {

using test::max_abs_diff;

TrainConfig small_config(const std::string& devices, int64_t batch = 64) { return test::small_config(devices, "onednn", batch); }

struct Trained {
  RunRecord record;
  std::vector<float> params;
};

Trained train(const TrainConfig& c, const std::shared_ptr<const DataSplit>& data) {
  MirroredTrainer t(c, data);
  Trained out{t.run(), t.final_params()};
  return out;
}

// A record of `c`'s configuration whose shares are `changes`, as a replay would read it.
std::string record_with_shares(const TrainConfig& c, const std::shared_ptr<const DataSplit>& data,
                               std::vector<ShareChange> changes, const QTemporaryDir& dir, const char* name) {
  MirroredTrainer t(c, data);
  RunRecord r;
  r.id = name;
  r.config = t.run_config();
  r.config.scenario.balance = true;
  r.config.share_changes = std::move(changes);
  const std::string file = dir.filePath(name).toStdString();
  write_run_json(r, file);
  return file;
}

TrainConfig replay_of(TrainConfig c, const std::string& file) {
  c.scenario.shares_from = file;
  return c;
}

}  // namespace

class TestBalancedTrainer : public QObject {
  Q_OBJECT
 private slots:
  void a_straggler_gets_the_smaller_share_and_a_replay_repeats_the_run() {
    auto data = test::make_synthetic_split(1024, 32);
    TrainConfig c = small_config("cpu:2");
    c.epochs = 4;   // 64 steps: a change needs a proposal and its confirmation 16 steps later
    c.scenario.balance = true;
    c.scenario.straggler.replica = 1;
    c.scenario.straggler.factor = 10;
    const Trained balanced = train(c, data);
    const RunRecord& r = balanced.record;
    QCOMPARE(r.status, RunStatus::Completed);
    QVERIFY(r.replicas_in_sync);
    QVERIFY(r.config.scenario.balance);
    const auto& changes = r.config.share_changes;
    QVERIFY2(changes.size() >= 2, "the shares changed at least once");
    QCOMPARE(changes.front().step, int64_t(0));
    QVERIFY(changes.front().shares == std::vector<int64_t>({32, 32}));
    const std::vector<int64_t>& last = changes.back().shares;
    QCOMPARE(last[0] + last[1], int64_t(64));
    QVERIFY2(last[0] > last[1], qPrintable(QString("shares %1 / %2").arg(last[0]).arg(last[1])));
    QVERIFY(last[1] >= 1);   // the minimum share: the straggler still measures its speed

    // The replay, without the straggler: the same shares at the same steps, the same bits.
    QTemporaryDir dir;
    const std::string file = dir.filePath("balanced.json").toStdString();
    write_run_json(r, file);
    TrainConfig again = replay_of(c, file);
    again.scenario.balance = false;   // implied by --shares-from
    again.scenario.straggler.replica = -1;
    again.scenario.straggler.factor = 1;
    const Trained replay = train(again, data);
    QCOMPARE(replay.record.status, RunStatus::Completed);
    QVERIFY(replay.record.config.scenario.balanced() && !replay.record.config.scenario.shares_from.empty());
    QCOMPARE(QString::fromStdString(replay.record.config.scenario.shares_from), QString::fromStdString(file));
    QVERIFY(replay.record.config.share_changes == changes);
    for (std::size_t e = 0; e < r.epochs.size(); ++e)
      QCOMPARE(QString::fromStdString(replay.record.epochs[e].param_digest),
               QString::fromStdString(r.epochs[e].param_digest));
    QVERIFY(replay.params == balanced.params);
  }

  void even_replayed_shares_are_lock_step_bit_for_bit() {
    auto data = test::make_synthetic_split(256, 32);
    const TrainConfig c = small_config("cpu:2");
    const Trained lock_step = train(c, data);
    QVERIFY(!lock_step.record.config.scenario.balance && lock_step.record.config.share_changes.empty());
    QTemporaryDir dir;
    const Trained even = train(replay_of(c, record_with_shares(c, data, {{0, {32, 32}}}, dir, "even.json")), data);
    QCOMPARE(even.record.status, RunStatus::Completed);
    QVERIFY(even.params == lock_step.params);
    QCOMPARE(QString::fromStdString(even.record.epochs[0].param_digest),
             QString::fromStdString(lock_step.record.epochs[0].param_digest));
  }

  void uneven_shares_train_what_one_replica_trains_data() {
    QTest::addColumn<int>("images");
    QTest::addColumn<int>("first");   // replica 0's share of 64 from step 3 on
    QTest::addColumn<QString>("model");
    QTest::newRow("48/16") << 256 << 48 << "reference";
    // 68 samples: a last step of 4, where replica 0's share 4 x 8/64 is empty (zero gradient).
    QTest::newRow("8/56, empty share in the last step") << 68 << 8 << "reference";
    // Dropout masks follow the global sample, whichever replica's share holds it.
    QTest::newRow("48/16, colour model with dropout")
        << 256 << 48 << "12x12x3:conv6@3s-pool@s-drop20-conv8_nobias-gap-drop10-dense5";
  }
  void uneven_shares_train_what_one_replica_trains() {
    QFETCH(int, images);
    QFETCH(int, first);
    QFETCH(QString, model);
    const ModelSpec spec = model_from_text(model.toStdString());
    auto data = test::make_model_split(spec, images, 32);
    TrainConfig c = small_config("cpu:2"), c1 = small_config("cpu:1");
    c.model = c1.model = spec;
    QTemporaryDir dir;
    const std::vector<ShareChange> shares = {{0, {32, 32}}, {1, {first, 64 - first}}};
    const Trained uneven = train(replay_of(c, record_with_shares(c, data, shares, dir, "uneven.json")), data);
    QCOMPARE(uneven.record.status, RunStatus::Completed);
    QVERIFY(uneven.record.replicas_in_sync);
    const Trained one = train(c1, data);
    // Each replica's loss is divided by the global batch: the same gradient up to the order
    // of the float additions (as for lock-step's even shares, test_trainer).
    const double diff = max_abs_diff(uneven.params, one.params);
    QVERIFY2(diff <= 2e-5, qPrintable(QString("weights differ by %1").arg(diff)));
    QVERIFY(std::fabs(uneven.record.epochs[0].train_loss - one.record.epochs[0].train_loss) <= 1e-4);
  }

  void bad_share_records_are_refused_naming_the_problem() {
    auto data = test::make_synthetic_split(256, 32);
    const TrainConfig c = small_config("cpu:2");
    QTemporaryDir dir;
    const QString missing = dir.filePath("missing.json");
    QVERIFY(test::expect_error<ConfigError>([&] { MirroredTrainer t(replay_of(c, missing.toStdString()), data); },
                                            {"--shares-from", missing, "missing"}));
    const QString corrupt = dir.filePath("corrupt.json");
    {
      QFile f(corrupt);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("{\"format_version\": 1, \"id\": ");
    }
    QVERIFY(test::expect_error<ConfigError>([&] { MirroredTrainer t(replay_of(c, corrupt.toStdString()), data); },
                                            {"--shares-from", corrupt, "not valid JSON"}));
    // A lock-step record has no shares.
    MirroredTrainer lock_step(c, data);
    RunRecord r;
    r.id = "lock-step";
    r.config = lock_step.run_config();
    const QString plain = dir.filePath("lock_step.json");
    write_run_json(r, plain.toStdString());
    QVERIFY(test::expect_error<ConfigError>([&] { MirroredTrainer t(replay_of(c, plain.toStdString()), data); },
                                            {"lock-step run", "no share changes"}));
    // Another configuration: another global batch.
    const std::string other = record_with_shares(small_config("cpu:2", 32), data, {{0, {16, 16}}}, dir, "b32.json");
    QVERIFY(test::expect_error<ConfigError>([&] { MirroredTrainer t(replay_of(c, other), data); },
                                            {"another configuration", "global batch was 32", "64"}));
  }

  void balance_is_for_cpu_replicas_with_the_breakdown() {
    TrainConfig c = small_config("cpu:2");
    c.scenario.balance = true;
    QVERIFY(check_run(c).empty());
    c.time_phases = false;
    QVERIFY(test::expect_error<ConfigError>([&] { require_runnable(c); }, "--no-breakdown"));
    TrainConfig gpu = small_config("cuda:0,cuda:1");
    gpu.backend = std::nullopt;
    gpu.scenario.balance = true;
    bool named = false;
    for (const RunProblem& p : check_run(gpu)) named |= p.option == "balance" && p.is_error();
    QVERIFY2(named, "balanced shares on GPUs are refused, naming --balance");
    // One replica: the whole batch is its share, a lock-step run (and recorded as one).
    TrainConfig one = small_config("cpu:1");
    one.scenario.balance = true;
    auto data = test::make_synthetic_split(64, 16);
    MirroredTrainer t(one, data);
    QVERIFY(!t.run_config().scenario.balanced());
  }
};

QTEST_GUILESS_MAIN(TestBalancedTrainer)
#include "test_balanced_trainer.moc"

// The mirrored trainer's contract: N replicas train to the same weights as one replica on
// the same global batch; replicas stay bit-identical; partial batches, per-replica batch
// mode, stop requests and impossible configurations behave as documented.
#include <QtTest>

#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "model/cnn_spec.h"
#include "model/model_text.h"
#include "model/init_params.h"
#include "trainer_fixtures.h"
#include "test_support.h"
#include "experiment/diagnosis.h"
#include "trainer/mirrored_trainer.h"
#include "trainer/progress_events.h"
#include "trainer/run_check.h"
#include "config/train_options.h"

#include <set>

#include <nlohmann/json.hpp>
#include "util/bandwidth.h"
#include "util/error.h"

using namespace mb;

namespace {

using test::max_abs_diff;
using test::small_config;

// Three channels, same padding, a same-padded pool, dropout twice, a bias-free conv and global
// average pooling: a model as far from the reference as the engines go.
const char* const kColourModel = "12x12x3:conv6@3s-pool@s-drop20-conv8_nobias-gap-drop10-dense5";

}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT
 private slots:
  void replicas_match_single_replica_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("train");
    QTest::addColumn<QString>("model");
    // 65 samples at batch 64: the last step has ONE sample, so with 2+ replicas some
    // replicas contribute an empty share (zero gradient) — the trickiest split.
    for (const char* backend : {"reference", "onednn"}) {
      QTest::addRow("%s cpu:2 even", backend) << backend << "cpu:2" << 256 << "reference";
      QTest::addRow("%s cpu:2 partial", backend) << backend << "cpu:2" << 65 << "reference";
      QTest::addRow("%s cpu:3 uneven", backend) << backend << "cpu:3" << 200 << "reference";
      // What-if models: the all-reduce and Adam over their own parameter counts.
      QTest::addRow("%s cpu:2 partial dense 300", backend) << backend << "cpu:2" << 65 << "dense:300";
      // A colour model of other layers with dropout: the masks follow the global sample, not
      // the replica, so every split draws the same ones.
      for (const char* devices : {"cpu:2", "cpu:3"})
        QTest::addRow("%s %s colour dropout", backend, devices)
            << backend << devices << 65 << kColourModel;
    }
    QTest::addRow("onednn cpu:3 uneven dense 1024") << "onednn" << "cpu:3" << 200 << "dense:1024";
  }
  void replicas_match_single_replica() {
    QFETCH(QString, backend);
    QFETCH(QString, devices);
    QFETCH(int, train);
    QFETCH(QString, model);
    const ModelSpec spec = model_from_text(model.toStdString());
    auto data = test::make_model_split(spec, train, 50);
    TrainConfig c1 = small_config("cpu:1", backend.toStdString()), cn = small_config(devices.toStdString(), backend.toStdString());
    c1.model = cn.model = spec;

    MirroredTrainer one(c1, data);
    RunRecord r1 = one.run();
    QCOMPARE(r1.status, RunStatus::Completed);
    QVERIFY(r1.config.model == spec);
    QCOMPARE(one.final_params().size(), spec.param_count());

    MirroredTrainer many(cn, data);
    RunRecord rn = many.run();
    QCOMPARE(rn.status, RunStatus::Completed);
    QVERIFY(rn.replicas_in_sync);
    QCOMPARE(rn.epochs.size(), std::size_t(1));

    // Same global batch, same order, same initial weights: only float summation order
    // differs (per-replica partial sums, then the all-reduce). After a few Adam steps of
    // size ~lr=1e-3 these differences stay orders of magnitude below the step size.
    const double diff = max_abs_diff(one.final_params(), many.final_params());
    qInfo("max |w_1 - w_N| = %.3g", diff);
    QVERIFY2(diff <= 2e-5, qPrintable(QString("weights differ by %1").arg(diff)));
    QVERIFY(std::fabs(r1.epochs[0].train_loss - rn.epochs[0].train_loss) <= 1e-4);
    QCOMPARE(rn.epochs[0].val_acc, r1.epochs[0].val_acc);
    // And training moved the weights at all.
    std::vector<float> initial(spec.param_count());
    init_params(spec, initial, 3);
    QVERIFY(max_abs_diff(initial, many.final_params()) > 1e-4);
  }

  // Gradient accumulation (--accumulate K): K micro-batches of a global batch of 16 step as one
  // batch of 64 (the same samples, the gradient their mean), up to summation order; on two
  // replicas as on one; 200 images end the epoch with a partial window (8 samples), which steps
  // with what it has, as the big batch's last step does. Replicas stay bit-identical.
  void accumulation_steps_as_one_big_batch_data() {
    QTest::addColumn<QString>("backend");
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("train");
    for (const char* backend : {"reference", "onednn"})
      for (const char* devices : {"cpu:1", "cpu:2"})
        for (int train : {256, 200}) QTest::addRow("%s %s %d", backend, devices, train) << backend << devices << train;
  }
  void accumulation_steps_as_one_big_batch() {
    QFETCH(QString, backend);
    QFETCH(QString, devices);
    QFETCH(int, train);
    auto data = test::make_synthetic_split(train, 50);
    TrainConfig big = small_config(devices.toStdString(), backend.toStdString(), 64);
    TrainConfig micro = small_config(devices.toStdString(), backend.toStdString(), 16);
    micro.scenario.accumulate = 4;
    MirroredTrainer a(big, data), b(micro, data);
    const RunRecord ra = a.run(), rb = b.run();
    QCOMPARE(rb.status, RunStatus::Completed);
    QVERIFY(rb.replicas_in_sync);
    QCOMPARE(rb.config.scenario.accumulate, 4);
    const double diff = max_abs_diff(a.final_params(), b.final_params());
    qInfo("max |w_big - w_accumulated| = %.3g", diff);
    QVERIFY2(diff <= 2e-5, qPrintable(QString("weights differ by %1").arg(diff)));
    // Not a no-op: without accumulation, batches of 16 step four times as often.
    TrainConfig plain = micro;
    plain.scenario.accumulate = 1;
    MirroredTrainer c(plain, data);
    c.run();
    QVERIFY(max_abs_diff(a.final_params(), c.final_params()) > 100 * std::max(diff, 1e-7));
  }

  // The learning-rate warm-up changes the steps (a smaller rate first), is recorded, and keeps
  // the replicas in sync; over zero epochs it is the plain run, bit for bit.
  void lr_warmup_ramps_the_rate() {
    auto data = test::make_synthetic_split(256, 50);
    TrainConfig plain = small_config("cpu:2", "onednn", 32), warm = plain, none = plain;
    warm.scenario.lr_warmup_epochs = 1;
    none.scenario.lr_warmup_epochs = 0;
    MirroredTrainer a(plain, data), b(warm, data), c(none, data);
    a.run();
    const RunRecord rb = b.run();
    c.run();
    QVERIFY(rb.replicas_in_sync);
    QCOMPARE(rb.config.scenario.lr_warmup_epochs, 1.0);
    QVERIFY(a.final_params() == c.final_params());
    std::vector<float> initial(plain.model.param_count());
    init_params(plain.model, initial, plain.seed);
    // Smaller steps: the warmed-up weights moved less far from the start.
    QVERIFY(max_abs_diff(initial, b.final_params()) < max_abs_diff(initial, a.final_params()));
  }

  // A simulated link of 1 Gbit/s between two replicas of dense 1024 (6.7 MB per all-reduce):
  // each all-reduce lasts at least the ring's 53 ms, counted as exchange in every replica's
  // breakdown (sleeps never end early), labelled in the record; the replicas stay in sync.
  void a_simulated_link_is_exchange() {
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.model = reference_family(1024);
    c.scenario.link.gbit = 1;
    c.scenario.link.latency_us = 20;
    MirroredTrainer t(c, data);
    const RunRecord r = t.run();
    QCOMPARE(r.status, RunStatus::Completed);
    QVERIFY(r.replicas_in_sync);
    QCOMPARE(r.config.scenario.link.gbit, 1.0);
    QCOMPARE(r.config.scenario.link.latency_us, 20.0);
    QVERIFY2(QString::fromStdString(r.config.communicator).contains("simulated link"), r.config.communicator.c_str());
    const double ring = ring_all_reduce_s(reference_family(1024).gradient_bytes(), 2, 1, 20);
    for (const auto& times : r.epochs.at(0).replica_times)
      QVERIFY2(times[phase::AllReduce] >= 4 * ring * 0.999,
               qPrintable(QString("exchange %1 s for 4 steps of %2 s").arg(times[phase::AllReduce]).arg(ring)));
  }

  // Overlap in buckets over the same link: the same sums (digests equal to one all-reduce's),
  // part of the wire time hidden under the backward pass and reported beside the step.
  void buckets_overlap_the_simulated_link() {
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.model = reference_family(1024);
    c.scenario.link = {1, 20};
    const RunRecord one = MirroredTrainer(c, data).run();
    c.scenario.bucket_mb = 1;
    const RunRecord buckets = MirroredTrainer(c, data).run();
    QCOMPARE(buckets.status, RunStatus::Completed);
    QVERIFY(buckets.replicas_in_sync);
    QCOMPARE(buckets.config.scenario.bucket_mb, 1.0);
    QCOMPARE(QString::fromStdString(buckets.epochs.back().param_digest),
             QString::fromStdString(one.epochs.back().param_digest));
    for (const auto& times : one.epochs.at(0).replica_times) QCOMPARE(times[phase::HiddenAllReduce], 0.0);
    for (const auto& times : buckets.epochs.at(0).replica_times)
      QVERIFY2(times[phase::HiddenAllReduce] > 0, "nothing hidden");
  }

  // PowerSGD: the replicas stay in step (every one applies the same factors), the math changes
  // (a low-rank gradient), and with one replica nothing is compressed (recorded as 0).
  void powersgd_keeps_replicas_in_sync() {
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    const RunRecord bare = MirroredTrainer(c, data).run();
    c.scenario.powersgd_rank = 2;
    const RunRecord psgd = MirroredTrainer(c, data).run();
    QCOMPARE(psgd.status, RunStatus::Completed);
    QVERIFY(psgd.replicas_in_sync);
    QCOMPARE(psgd.config.scenario.powersgd_rank, 2);
    QVERIFY(psgd.epochs.back().param_digest != bare.epochs.back().param_digest);
    TrainConfig one = small_config("cpu:1", "onednn", 64);
    one.scenario.powersgd_rank = 2;
    QCOMPARE(MirroredTrainer(one, data).run().config.scenario.powersgd_rank, 0);
  }

  void learns_the_synthetic_task() {
    auto data = test::make_synthetic_split(2048, 256);
    TrainConfig c = small_config("cpu:2", "auto", 64);
    c.epochs = 2;
    MirroredTrainer t(c, data);
    // The observer runs on a training thread, where a failed QVERIFY would not stop the test:
    // collect what it sees (under a lock) and check it here.
    std::mutex seen_mutex;
    std::vector<StepProgress> steps;
    std::vector<int> epochs;
    std::vector<std::string> lines;
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      std::lock_guard lock(seen_mutex);
      steps.push_back(p);
    };
    obs.on_epoch = [&](const EpochMetrics& m) {
      std::lock_guard lock(seen_mutex);
      epochs.push_back(m.epoch);
    };
    obs.on_log = [&](LogLevel, const std::string& line) {
      std::lock_guard lock(seen_mutex);
      lines.push_back(line);
    };
    RunRecord r = t.run(obs);
    QCOMPARE(lines.size(), std::size_t(3));  // start + one line per epoch
    QVERIFY(QString::fromStdString(lines[2]).startsWith("epoch 2/2"));
    QCOMPARE(r.status, RunStatus::Completed);
    QVERIFY(epochs == std::vector<int>({1, 2}));
    QVERIFY(steps.size() >= 2);
    for (const StepProgress& p : steps) QVERIFY2(p.step >= 1 && p.step <= p.steps, qPrintable(QString::number(p.step)));
    QVERIFY2(r.epochs.back().val_acc > 0.9, qPrintable(QString::number(r.epochs.back().val_acc)));
    for (const auto& m : r.epochs) {
      QVERIFY(m.time_s > 0 && m.images_per_s > 0);
      QVERIFY(m.allreduce_s >= 0 && m.allreduce_s <= m.time_s);
    }
    QCOMPARE(r.config.replicas, 2);
    QCOMPARE(r.config.train_size, int64_t(2048));
  }

  void per_replica_batch_and_lr_scaling() {
    auto data = test::make_synthetic_split(128, 16);
    TrainConfig c = small_config("cpu:2", "reference", 32);
    c.per_replica_batch = true;
    c.scale_lr = true;
    MirroredTrainer t(c, data);
    QCOMPARE(t.run_config().global_batch, int64_t(64));
    QCOMPARE(t.run_config().per_replica_batch, int64_t(32));
    QCOMPARE(t.run_config().learning_rate, 2e-3);
  }

  void stop_request_ends_at_the_next_report() {
    // A stop asked for at one report is seen by every replica at the next (every
    // kHostStepsPerReport steps on CPU replicas): the run ends there, in the same epoch.
    auto data = test::make_synthetic_split(1024, 16);
    TrainConfig c = small_config("cpu:2", "reference", 32);
    c.epochs = 3;
    MirroredTrainer t(c, data);
    int64_t last_step = 0;
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      last_step = p.step;
      if (p.step >= 2) t.request_stop();
    };
    RunRecord r = t.run(obs);
    QCOMPARE(r.status, RunStatus::Stopped);
    QVERIFY(r.epochs.empty());
    QVERIFY2(last_step <= 2 * ReplicaEngine::kHostStepsPerReport, qPrintable(QString::number(last_step)));
  }

  void failure_mid_epoch_fails_the_run_data() {
    QTest::addColumn<bool>("std_exception");
    QTest::addRow("std::exception") << true;
    QTest::addRow("other exception") << false;
  }
  void failure_mid_epoch_fails_the_run() {
    // The observer runs inside the step barrier's completion on one replica's thread: a throw
    // there must end the run as "failed" with the message, not hang the other replicas or
    // escape the thread (std::terminate).
    QFETCH(bool, std_exception);
    auto data = test::make_synthetic_split(512, 16);
    MirroredTrainer t(small_config("cpu:3", "reference", 32), data);
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      if (p.step < 3) return;
      if (std_exception) throw std::runtime_error("observer broke at step 3");
      throw 42;
    };
    RunRecord r = t.run(obs);
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY(r.epochs.empty());
    QVERIFY2(QString::fromStdString(r.error).contains(std_exception ? "observer broke at step 3" : "unknown exception"),
             r.error.c_str());
  }

  void huge_per_replica_batch_is_rejected() {
    // batch x replicas would overflow int64 without the early bound.
    auto data = test::make_synthetic_split(64, 8);
    TrainConfig c = small_config("cpu:2", "reference", std::numeric_limits<int64_t>::max());
    c.per_replica_batch = true;
    QVERIFY(test::expect_error<ConfigError>([&] { MirroredTrainer t(c, data); }, "--batch: 9223372036854775807 is out of range"));
  }

  void stop_in_the_last_step_keeps_the_epoch() {
    // The whole epoch trained: it is reported, and a stop after the last epoch's last step
    // leaves a completed run.
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:2", "reference", 64);
    MirroredTrainer t(c, data);
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      if (p.step == p.steps) t.request_stop();
    };
    RunRecord r = t.run(obs);
    QCOMPARE(r.epochs.size(), std::size_t(1));
    QCOMPARE(r.status, RunStatus::Completed);
  }

  void config_checked_without_data() {
    TrainConfig c = small_config("cpu:2", "auto", 64);
    QVERIFY(test::expect_error<ConfigError>([&] { set_option(train_option("backend"), c, "magic"); }, "magic"));
    QVERIFY(check_run(c).empty());
    c.lr = 1e300;
    QVERIFY(test::expect_error<ConfigError>([&] { require_runnable(c); }, "--lr"));
  }

  void split_of_the_global_batch() {
    // 10 samples over 4 replicas: 3, 3, 2, 2.
    QCOMPARE(replica_share_begin(10, 4, 0), int64_t(0));
    QCOMPARE(replica_share_begin(10, 4, 1), int64_t(3));
    QCOMPARE(replica_share_begin(10, 4, 2), int64_t(6));
    QCOMPARE(replica_share_begin(10, 4, 3), int64_t(8));
    QCOMPARE(replica_share_begin(10, 4, 4), int64_t(10));
    // 1 sample over 2 replicas: replica 1 gets none.
    QCOMPARE(replica_share_begin(1, 2, 1), int64_t(1));
    QCOMPARE(replica_share_begin(1, 2, 2), int64_t(1));
  }

  void impossible_configurations_data() {
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("epochs");
    QTest::addColumn<double>("lr");
    QTest::addColumn<QString>("message");
    QTest::addRow("batch < replicas") << "cpu:4" << 3 << 1 << 1e-3 << "smaller than the 4 replicas";
    QTest::addRow("zero epochs") << "cpu:1" << 64 << 0 << 1e-3 << "epochs";
    QTest::addRow("negative lr") << "cpu:1" << 64 << 1 << -1.0 << "lr";
    QTest::addRow("unknown device") << "tpu:0" << 64 << 1 << 1e-3 << "tpu";
    QTest::addRow("zero replicas") << "cpu:0" << 64 << 1 << 1e-3 << "cpu:0";
  }
  void impossible_configurations() {
    QFETCH(QString, devices);
    QFETCH(int, batch);
    QFETCH(int, epochs);
    QFETCH(double, lr);
    QFETCH(QString, message);
    auto data = test::make_synthetic_split(64, 8);
    QVERIFY(test::expect_error<ConfigError>(
        [&] {
          TrainConfig c = small_config(devices.toStdString(), "reference", batch);   // the devices parse here
          c.epochs = epochs;
          c.lr = lr;
          MirroredTrainer t(c, data);
        },
        message));
  }

  // ---- where the time goes (the per-replica breakdown, the trace, the straggler) ----------

  void phases_add_up_to_the_epoch() {
    // Every replica's phases cover its epoch: the step is forward + backward + wait +
    // all-reduce + optimizer, so their sum is the epoch's training time less only what lies
    // outside any phase (the shuffle, timer gaps; typically < 1 %). Never more than the epoch
    // (a category counted twice); at least half of it even when another test shares the
    // cores and the thread is descheduled between two timers (a category left out).
    auto data = test::make_synthetic_split(1024, 32);
    MirroredTrainer t(small_config("cpu:2", "onednn", 64), data);
    const RunRecord r = t.run();
    QCOMPARE(r.status, RunStatus::Completed);
    const EpochMetrics& e = r.epochs.at(0);
    QCOMPARE(e.replica_times.size(), std::size_t(2));
    for (const PhaseTimes& p : e.replica_times) {
      for (double v : {p[phase::Forward], p[phase::Backward], p[phase::AllReduce], p[phase::Optimizer], p[phase::Wait]}) QVERIFY(v >= 0);
      QVERIFY(p[phase::Forward] > 0 && p[phase::Backward] > 0 && p[phase::Optimizer] > 0);
      QVERIFY2(p.total() <= 1.01 * e.time_s + 1e-3 && p.total() >= 0.5 * e.time_s,
               qPrintable(QString("phases %1 s, epoch %2 s").arg(p.total()).arg(e.time_s)));
      // The CPU time while computing is measured beside the step, never more than its compute.
      QVERIFY2(p[phase::ComputeCpu] > 0 && p[phase::ComputeCpu] <= 1.01 * p.compute_s() + 1e-3,
               qPrintable(QString("CPU %1 s, compute %2 s").arg(p[phase::ComputeCpu]).arg(p.compute_s())));
    }
    // The record's all-reduce share is replica 0's exchange plus waiting.
    QCOMPARE(e.allreduce_s, e.replica_times[0][phase::AllReduce] + e.replica_times[0][phase::Wait]);
    QCOMPARE(QString::fromStdString(e.param_digest).size(), 16);
  }

  void the_epoch_in_progress_adds_up_to_the_epoch() {
    // The live breakdown: each step report carries the epoch's phases so far, per replica;
    // the epoch's last report holds exactly what the epoch's record then says, and the JSON
    // stream (the workbench's child processes) carries them unchanged.
    auto data = test::make_synthetic_split(64 * 6, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.epochs = 2;
    MirroredTrainer t(c, data);
    std::vector<StepProgress> last_of_epoch;
    std::mutex m;
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      std::lock_guard lock(m);
      if (p.step == p.steps) last_of_epoch.push_back(p);
    };
    const RunRecord r = t.run(obs);
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(last_of_epoch.size(), std::size_t(2));
    for (std::size_t e = 0; e < 2; ++e) {
      const StepProgress& p = last_of_epoch[e];
      QCOMPARE(p.epoch_times.size(), std::size_t(2));
      for (std::size_t k = 0; k < 2; ++k) {
        QCOMPARE(p.epoch_times[k][phase::Forward], r.epochs[e].replica_times[k][phase::Forward]);
        QCOMPARE(p.epoch_times[k][phase::Wait], r.epochs[e].replica_times[k][phase::Wait]);
        QCOMPARE(p.epoch_times[k].total(), r.epochs[e].replica_times[k].total());
      }
      ProgressEvent ev;
      ev.kind = ProgressEvent::Kind::Step;
      ev.step = p;
      const auto back = parse_progress_line(to_json_line(ev));
      QVERIFY(back.has_value());
      QCOMPARE(back->step.epoch_times.size(), std::size_t(2));
      QCOMPARE(back->step.epoch_times[1][phase::Backward], p.epoch_times[1][phase::Backward]);
      QCOMPARE(back->step.recent.size(), p.recent.size());
    }
  }

  void no_breakdown_leaves_the_phases_empty() {
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:1", "onednn", 64);
    c.time_phases = false;
    MirroredTrainer t(c, data);
    const RunRecord r = t.run();
    const PhaseTimes& p = r.epochs.at(0).replica_times.at(0);
    QCOMPARE(p[phase::Forward] + p[phase::Backward] + p[phase::Optimizer], 0.0);
  }

  void a_straggler_makes_the_others_wait() {
    // Replica 1 computes 10x slower: lock-step training runs at its pace, so replica 0 spends
    // most of its step waiting for it. Factor 10 so that only a replica 0 slowed ten times
    // by other load could reverse the waits; the straggler's own slowdown is checked exactly.
    auto data = test::make_synthetic_split(512, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.scenario.straggler.replica = 1;
    c.scenario.straggler.factor = 10.0;
    MirroredTrainer t(c, data);
    QCOMPARE(t.run_config().scenario.straggler.replica, 1);
    const RunRecord r = t.run();
    QCOMPARE(r.status, RunStatus::Completed);
    QVERIFY(r.replicas_in_sync);   // slower, not different
    const auto& times = r.epochs.at(0).replica_times;
    QVERIFY2(times[0][phase::Wait] > times[1][phase::Wait],
             qPrintable(QString("wait %1 s vs the straggler's %2 s").arg(times[0][phase::Wait]).arg(times[1][phase::Wait])));
    // The straggler sleeps (factor - 1) x its whole forward+backward after it, counted as
    // backward: at least 9x its forward whatever the load (sleeps never end early; 1 us per
    // step for the nanosecond rounding of the sleep).
    const double steps = 512.0 / 64;
    QVERIFY2(times[1][phase::Backward] + steps * 1e-6 >= 9.0 * times[1][phase::Forward],
             qPrintable(QString("backward %1 s, forward %2 s").arg(times[1][phase::Backward]).arg(times[1][phase::Forward])));
    QVERIFY_THROWS_EXCEPTION(ConfigError, [] {
      TrainConfig bad = small_config("cpu:2", "onednn", 64);
      bad.scenario.straggler.replica = 2;   // no such replica
      require_runnable(bad);
    }());
  }

  // The input pipeline with a simulated latency of 2 ms per image, one loader and a window of
  // one step: each replica's 32 images take 64 ms to load, far more than computing them with a
  // small dense model (a millisecond or two, under the sanitizers too; the reference CNN takes
  // longer than the loading there), so the replicas wait for input most of each step; the math
  // is untouched (the same digests as the run without it), the record keeps the settings, and
  // the card says input-bound.
  void a_slow_input_shows_as_waiting_for_input() {
    auto data = test::make_synthetic_split(256, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.model = model_from_text("dense32-dense10");
    const RunRecord plain = MirroredTrainer(c, data).run();
    c.scenario.input.latency_ms = 2;
    c.scenario.input.loaders = 1;
    c.scenario.input.prefetch = 1;
    c.trace = true;
    MirroredTrainer traced(c, data);
    const RunRecord slow = traced.run();
    // The trace lays each step out as it ran: the wait for input before the forward pass.
    const nlohmann::json trace = nlohmann::json::parse(chrome_trace_json(slow, traced.trace()));
    double input_ts = -1, forward_ts = -1;
    for (const auto& ev : trace.at("traceEvents")) {
      if (ev.value("tid", -1) != 0 || ev.value("ph", "") != "X") continue;
      if (ev.at("name") == "waiting for input" && input_ts < 0) input_ts = ev.at("ts").get<double>();
      if (ev.at("name") == "forward" && forward_ts < 0) forward_ts = ev.at("ts").get<double>();
    }
    QVERIFY2(input_ts >= 0 && forward_ts > input_ts, qPrintable(QString("%1 %2").arg(input_ts).arg(forward_ts)));
    QCOMPARE(slow.status, RunStatus::Completed);
    QCOMPARE(QString::fromStdString(slow.epochs.back().param_digest), QString::fromStdString(plain.epochs.back().param_digest));
    QCOMPARE(slow.config.scenario.input.latency_ms, 2.0);
    QCOMPARE(slow.config.scenario.input.loaders, 1);
    for (const PhaseTimes& t : slow.epochs.at(0).replica_times) {
      // Four steps of 32 images at 2 ms each: the loader's 256 ms less what it prepared while
      // the replica computed (the window admits one step ahead). Sleeps never end early.
      QVERIFY2(t[phase::InputWait] >= 0.05, qPrintable(QString::number(t[phase::InputWait])));
    }
    for (const PhaseTimes& t : plain.epochs.at(0).replica_times) QCOMPARE(t[phase::InputWait], 0.0);
    const Diagnosis d = diagnose(slow, &plain, nullptr);
    QVERIFY2(d.input_share > 0.25, qPrintable(QString::number(d.input_share)));
    QCOMPARE(int(d.bound), int(Bound::Input));
    const QString text = QString::fromStdString(diagnosis_text(d, slow));
    QVERIFY2(text.contains("Input-bound") && text.contains("2 ms of latency per image") && text.contains("More loaders"),
             qPrintable(text));
  }

  void the_trace_has_every_replica_and_phase() {
    auto data = test::make_synthetic_split(640, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 64);
    c.epochs = 2;
    c.trace = true;
    MirroredTrainer t(c, data);
    const RunRecord r = t.run();
    const auto& traces = t.trace();
    QCOMPARE(traces.size(), std::size_t(2));
    for (const auto& steps : traces) {
      QCOMPARE(steps.size(), std::size_t(20));   // 10 steps x 2 epochs, all of them (few enough)
      for (std::size_t k = 1; k < steps.size(); ++k) QVERIFY(steps[k].start_s >= steps[k - 1].start_s);
    }
    const nlohmann::json j = nlohmann::json::parse(chrome_trace_json(r, traces));
    std::set<std::pair<int, std::string>> seen;
    std::set<int> named_tracks;
    for (const auto& ev : j.at("traceEvents")) {
      if (ev.at("ph") == "M" && ev.at("name") == "thread_name") named_tracks.insert(ev.at("tid").get<int>());
      if (ev.at("ph") != "X") continue;
      QVERIFY(ev.at("dur").get<double>() > 0 && ev.at("ts").get<double>() >= 0);
      seen.insert({ev.at("tid").get<int>(), ev.at("name").get<std::string>()});
    }
    QCOMPARE(named_tracks, (std::set<int>{0, 1}));
    for (int tid : {0, 1})
      for (const char* phase : {"forward", "backward", "all-reduce", "optimizer"})
        QVERIFY2(seen.count({tid, phase}), phase);
  }

  void detailed_steps_hold_the_real_numbers() {
    // The classroom view's step: the global batch split into the replicas' shares, each
    // replica's own loss and gradient, and the same parameters everywhere after the update.
    auto data = test::make_synthetic_split(64 * 40, 16);
    MirroredTrainer t(small_config("cpu:3", "onednn", 64), data);
    std::vector<StepProgress> detailed;
    std::mutex m;
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) {
      std::lock_guard lock(m);
      if (p.has_detail) detailed.push_back(p);
    };
    const RunRecord r = t.run(obs);
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(int(detailed.size()), 40 / 16);   // steps 16 and 32
    for (const StepProgress& p : detailed) {
      const StepDetail& d = p.detail;
      QCOMPARE(p.step % 16, int64_t(0));
      QCOMPARE(d.global_batch, int64_t(64));
      QCOMPARE(int(d.samples.size()), 64);
      QCOMPARE(d.allreduce_bytes, double(cnn::kReferenceParams) * 4);   // the reference model's
      QCOMPARE(int(d.replicas.size()), 3);
      int64_t covered = 0;
      for (int k = 0; k < 3; ++k) {
        const ReplicaStepDetail& x = d.replicas[std::size_t(k)];
        QCOMPARE(x.share_begin, covered);   // contiguous shares of the global batch
        covered += x.share_count;
        QVERIFY(std::isfinite(x.grad_norm) && x.grad_norm > 0);
        QVERIFY(x.loss > 0 && x.correct >= 0 && x.correct <= x.share_count);
        QCOMPARE(x.digest, d.replicas[0].digest);   // one update, everywhere
        QVERIFY(x.phases.total() > 0);
      }
      QCOMPARE(covered, int64_t(64));
      // The shares' sample indices are the epoch order's: distinct and in range.
      std::set<int32_t> unique(d.samples.begin(), d.samples.end());
      QCOMPARE(int(unique.size()), 64);
      QVERIFY(*unique.rbegin() < 64 * 40);
    }
  }

  void teaching_pace_gives_every_step_in_detail() {
    auto data = test::make_synthetic_split(32 * 4, 16);
    TrainConfig c = small_config("cpu:2", "onednn", 32);
    c.step_delay_s = 0.05;
    MirroredTrainer t(c, data);
    int detailed = 0;
    TrainObserver obs;
    obs.on_step = [&](const StepProgress& p) { detailed += p.has_detail ? 1 : 0; };
    QElapsedTimer clock;
    clock.start();
    const RunRecord r = t.run(obs);
    QCOMPARE(r.status, RunStatus::Completed);
    QCOMPARE(detailed, 4);
    QVERIFY(clock.elapsed() >= 4 * 50);   // at least the pace asked for
    c.step_delay_s = 61;
    QVERIFY(test::expect_error<ConfigError>([&] { require_runnable(c); }, "--pace: 61 is out of range"));
  }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "test_trainer.moc"

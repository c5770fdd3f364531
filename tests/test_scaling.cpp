// The scaling predictor: its model on synthetic calibrations with answers worked out by hand
// (step = compute(b) + all-reduce(G) + exchange; epoch = steps x step), the ring
// extrapolation to unmeasured rank counts, more machines over a link, the flags for
// predictions beyond this machine; and a quick real calibration that yields sane points.
#include <QtTest>

#include <nlohmann/json.hpp>

#include "experiment/calibrate.h"
#include "experiment/scaling_model.h"
#include "comm/powersgd.h"
#include "model/model_text.h"
#include "util/bandwidth.h"
#include "util/error.h"

using namespace mb;

namespace {

constexpr double kGradient = 487720;   // the reference CNN's gradient, bytes

// compute(k, b) = 1 ms + 0.1 ms * b at every concurrency (perfect scaling of compute);
// all-reduce among 2 ranks: 10 us + 1 ns/byte.
Calibration synthetic(int cores) {
  Calibration c;
  c.device = "synthetic";
  c.cores = cores;
  c.train_size = 60000;
  c.gradient_bytes = kGradient;
  for (int k : {1, 2})
    for (int64_t b : {16, 32, 64, 128}) c.compute.push_back({k, b, 1e-3 + 1e-4 * double(b)});
  for (double bytes : {4096.0, 65536.0, kGradient, 4194304.0}) c.allreduce.push_back({2, bytes, 10e-6 + 1e-9 * bytes});
  return c;
}

// A copy: a reference into a temporary list of predictions would dangle (ASan caught one).
Prediction find(const std::vector<Prediction>& ps, int n, const char* mode) {
  for (const auto& p : ps)
    if (p.replicas == n && std::string_view(to_string(p.mode)) == mode) return p;
  throw std::runtime_error("no such prediction");
}

bool near(double a, double b, double rel = 1e-9) { return std::fabs(a - b) <= rel * std::max(1.0, std::fabs(b)); }

}  // namespace

class TestScaling : public QObject {
  Q_OBJECT
 private slots:
  void a_line_is_fitted_exactly() {
    const LinearFit f = fit_line({1, 2, 3, 4}, {3, 5, 7, 9});
    QVERIFY(near(f.a, 1) && near(f.b, 2));
    const LinearFit one = fit_line({10}, {5});   // one point: through the origin
    QVERIFY(near(one.at(20), 10));
    QVERIFY_THROWS_EXCEPTION(ConfigError, fit_line({}, {}));
  }

  void global_batch_predictions_by_hand() {
    const auto ps = predict_scaling(synthetic(2), PredictOptions{2, 128, 0, 20e-6});
    // n = 1: 469 steps x (1 + 12.8 ms), no communication.
    const Prediction& one = find(ps, 1, "global");
    QVERIFY(near(one.epoch_s, 469 * 13.8e-3));
    QCOMPARE(one.comm_share, 0.0);
    QCOMPARE(one.speedup, 1.0);
    // n = 2: b = 64 -> 7.4 ms compute; all-reduce 10 us + 487.72 us; exchange (alpha) 10 us.
    const Prediction& two = find(ps, 2, "global");
    QCOMPARE(two.per_replica_batch, int64_t(64));
    const double step = 7.4e-3 + (10e-6 + 487.72e-6) + 10e-6;
    QVERIFY2(near(two.step_s, step), qPrintable(QString::number(two.step_s, 'g', 12)));
    QVERIFY(near(two.epoch_s, 469 * step));
    QVERIFY(near(two.speedup, one.epoch_s / two.epoch_s));
    QVERIFY(near(two.efficiency, two.speedup / 2));
    QVERIFY(near(two.comm_share, (step - 7.4e-3) / step));
    QVERIFY(!two.beyond_machine && two.note.empty());
  }

  // Gradient accumulation: the gradient's all-reduce once per K steps; the statistics exchange
  // (alpha) still every step.
  void accumulation_divides_the_gradient_exchange() {
    PredictOptions o{2, 128, 0, 20e-6};
    o.scenario.accumulate = 4;
    const Prediction two = find(predict_scaling(synthetic(2), o), 2, "global");
    const double step = 7.4e-3 + (10e-6 + 487.72e-6) / 4 + 10e-6;
    QVERIFY2(near(two.step_s, step), qPrintable(QString::number(two.step_s, 'g', 12)));
    QCOMPARE(find(predict_scaling(synthetic(2), o), 1, "global").comm_s, 0.0);
    // With the optimizer's part calibrated (0.5 ms per step at both concurrencies), 3 of every 4
    // optimizer steps are saved, with one replica too; without it, none.
    Calibration with_adam = synthetic(2);
    for (auto& p : with_adam.compute) p.optimizer_s = 0.5e-3;
    QCOMPARE(predicted_optimizer_s(with_adam, 2), 0.5e-3);
    const auto ps = predict_scaling(with_adam, o);
    QVERIFY(near(find(ps, 2, "global").compute_s, 7.4e-3 - 0.75 * 0.5e-3));
    QVERIFY(near(find(ps, 1, "global").compute_s, 13.8e-3 - 0.75 * 0.5e-3));
    QVERIFY(near(two.compute_s, 7.4e-3));
    QCOMPARE(predicted_optimizer_s(synthetic(2), 2), 0.0);
    // And each micro-batch's pass into the window's sum (0.1 ms alone, 0.2 ms with both cores).
    with_adam.gradient_pass = {{1, 0.1e-3}, {2, 0.2e-3}};
    const auto passes = predict_scaling(with_adam, o);
    QVERIFY(near(find(passes, 2, "global").compute_s, 7.4e-3 - 0.75 * 0.5e-3 + 0.2e-3));
    QVERIFY(near(find(passes, 1, "global").compute_s, 13.8e-3 - 0.75 * 0.5e-3 + 0.1e-3));
    QCOMPARE(predicted_gradient_pass_s(with_adam, 8), 0.2e-3);   // beyond the measured: the nearest
  }

  // A compressed all-reduce halves the bytes a simulated link carries; within the machine's own
  // memory the exchange is the calibrated FP32 one.
  void compression_halves_what_the_link_carries() {
    PredictOptions o{2, 128, 0, 20e-6};
    o.scenario.link = {1.0, 50.0};
    const double fp32 = find(predict_scaling(synthetic(2), o), 2, "global").comm_s;
    o.scenario.allreduce_dtype = WireDtype::Bf16;
    const double bf16 = find(predict_scaling(synthetic(2), o), 2, "global").comm_s;
    const double alpha = 10e-6;   // the statistics exchange, every step either way
    QVERIFY(near(fp32 - alpha, ring_all_reduce_s(kGradient, 2, 1.0, 50.0)));
    QVERIFY(near(bf16 - alpha, ring_all_reduce_s(kGradient / 2, 2, 1.0, 50.0)));
    o.scenario.link = {};
    QVERIFY(near(find(predict_scaling(synthetic(2), o), 2, "global").comm_s, 10e-6 + 487.72e-6 + alpha));
  }

  // PowerSGD: two exchanges (the plain tensors with P, then Q), each a calibrated all-reduce,
  // plus its arithmetic on every replica at once: a line in the rank at that concurrency.
  void powersgd_adds_two_exchanges_and_its_arithmetic() {
    Calibration c = synthetic(2);   // no model named: the reference CNN, by its gradient's size
    c.powersgd = {{1, 1, 1.0e-3}, {4, 1, 2.0e-3}, {1, 2, 1.5e-3}, {4, 2, 3.0e-3}};
    const ModelSpec model = model_from_text(timed_model(c));
    const ModelShape& shape = model.shape();
    PredictOptions o{2, 128, 0, 20e-6};
    const double alpha = 10e-6;   // the statistics exchange
    for (int rank : {4, 2}) {
      o.scenario.powersgd_rank = rank;
      const PowerSgdLayout layout = powersgd_layout(shape.params, shape.param_count, rank);
      const double first = double(layout.plain_floats() + layout.p_floats()) * 4, second = double(layout.q_floats()) * 4;
      const double codec = rank == 4 ? 3.0e-3 : 2.0e-3;   // 1.5 ms + 0.5 ms per rank above 1
      const auto ps = predict_scaling(c, o);
      const Prediction two = find(ps, 2, "global");
      QVERIFY2(near(two.comm_s, (10e-6 + 1e-9 * first) + (10e-6 + 1e-9 * second) + codec + alpha),
               qPrintable(QStringLiteral("rank %1: %2").arg(rank).arg(two.comm_s, 0, 'g', 12)));
      QVERIFY(two.note.empty());
      QCOMPARE(find(ps, 1, "global").comm_s, 0.0);   // one replica: nothing wrapped
    }
    QVERIFY(near(*predicted_powersgd_codec_s(c, 4, 1), 2.0e-3));
    QVERIFY(near(*predicted_powersgd_codec_s(c, 4, 8), 3.0e-3));   // beyond the measured: the nearest
    // A calibration made before the arithmetic was timed: the exchanges only, and the note says so.
    c.powersgd.clear();
    QVERIFY(!predicted_powersgd_codec_s(c, 4, 2));
    QVERIFY(find(predict_scaling(c, o), 2, "global").note.find("recalibrate") != std::string::npos);
  }

  void per_replica_batch_predictions_by_hand() {
    const auto ps = predict_scaling(synthetic(2), PredictOptions{2, 128, 0, 20e-6});
    // Global 256, 235 steps, each replica still at 128.
    const Prediction& two = find(ps, 2, "per-replica");
    QCOMPARE(two.global_batch, int64_t(256));
    QCOMPARE(two.per_replica_batch, int64_t(128));
    const double step = 13.8e-3 + (10e-6 + 487.72e-6) + 10e-6;
    QVERIFY(near(two.epoch_s, 235 * step));
  }

  void unmeasured_rank_counts_follow_the_ring() {
    // 4 cores, the sweep only measured 2 ranks: latency x (n-1), bytes x (n-1)/n / (1/2).
    Calibration c = synthetic(4);
    QVERIFY(near(predicted_allreduce_s(c, 2, kGradient), 10e-6 + 1e-9 * kGradient));
    QVERIFY(near(predicted_allreduce_s(c, 4, kGradient), 30e-6 + 1.5e-9 * kGradient));
    QCOMPARE(predicted_allreduce_s(c, 1, kGradient), 0.0);
  }

  void beyond_the_machine_is_said() {
    const auto ps = predict_scaling(synthetic(2), PredictOptions{4, 128, 0, 20e-6});
    const Prediction& four = find(ps, 4, "global");
    QVERIFY(four.beyond_machine);
    QVERIFY(QString::fromStdString(four.note).contains("share cores"));
    // 4 replicas time-share 2 cores: two turns of lock-step compute at b = 32 each step.
    QVERIFY(near(four.compute_s, 2 * (1e-3 + 32e-4)));
  }

  void more_machines_over_a_link() {
    // 2 cores per machine, n = 4 -> 2 machines over 10 Gbit/s, 20 us per message.
    const auto ps = predict_scaling(synthetic(2), PredictOptions{4, 128, 10, 20e-6});
    const Prediction& four = find(ps, 4, "global");
    QCOMPARE(four.machines, 2);
    QVERIFY(near(four.compute_s, 1e-3 + 32e-4));   // each machine's 2 replicas, at once
    const double intra = 10e-6 + 1e-9 * kGradient;
    const double inter = 2 * 20e-6 + 1.0 * kGradient / (10e9 / 8);
    const double exchange = 10e-6 + 2 * 20e-6;
    QVERIFY2(near(four.comm_s, intra + inter + exchange), qPrintable(QString::number(four.comm_s, 'g', 12)));
    QVERIFY(QString::fromStdString(four.note).contains("2 machines"));
  }

  void two_hosts_of_one_replica_each_are_two_machines() {
    // --machines 2: 2 replicas on 2 hosts (of 2 cores each) talk over the link, not in memory.
    PredictOptions o{2, 128, 1, 50e-6};
    o.machines = 2;
    const auto ps = predict_scaling(synthetic(2), o);
    const Prediction& one = find(ps, 1, "global");
    QCOMPARE(one.machines, 1);   // one replica needs one machine
    QCOMPARE(one.comm_s, 0.0);
    const Prediction& two = find(ps, 2, "global");
    QCOMPARE(two.machines, 2);
    QVERIFY(near(two.compute_s, 1e-3 + 64e-4));   // one replica per machine at b = 64
    const double ring = 2 * 50e-6 + 1.0 * kGradient / (1e9 / 8);
    const double exchange = 2 * 50e-6;   // one replica per machine: the link alone
    QVERIFY2(near(two.comm_s, ring + exchange), qPrintable(QString::number(two.comm_s, 'g', 12)));
    QVERIFY(two.beyond_machine);
    QVERIFY(QString::fromStdString(two.note).contains("2 machines of 1 replica(s)"));
    // Without --machines the same two replicas fit this machine: no link at all.
    const auto here = predict_scaling(synthetic(2), PredictOptions{2, 128, 1, 50e-6});
    QCOMPARE(find(here, 2, "global").machines, 1);
    QVERIFY(find(here, 2, "global").comm_s < two.comm_s);
    // 3 replicas on 2 machines: the fuller one has 2, summed in memory first.
    o.max_replicas = 3;
    const auto on_two_machines = predict_scaling(synthetic(2), o);
    const Prediction& three = find(on_two_machines, 3, "global");
    QCOMPARE(three.machines, 2);
    QVERIFY(near(three.compute_s, 1e-3 + 43e-4));
    // Machines without a link between them are refused.
    PredictOptions no_link;
    no_link.machines = 2;
    QVERIFY_THROWS_EXCEPTION(ConfigError, predict_scaling(synthetic(2), no_link));
  }

  void json_and_csv_carry_every_prediction() {
    const Calibration c = synthetic(2);
    const auto ps = predict_scaling(c, PredictOptions{3, 128, 0, 20e-6});
    QCOMPARE(int(ps.size()), 6);   // 1..3 in both modes
    const nlohmann::json j = to_json(ps[1]);
    for (const char* key : {"replicas", "mode", "epoch_s", "speedup", "efficiency", "comm_share"}) QVERIFY(j.contains(key));
    const nlohmann::json cal = to_json(c);
    QCOMPARE(cal.at("allreduce").at(0).at("busbw_gbs").get<double>(), cal.at("allreduce").at(0).at("algbw_gbs").get<double>());
    QCOMPARE(QString::fromStdString(predictions_csv(ps)).count('\n'), 7);
  }

  void balanced_shares_add_the_replicas_throughputs() {
    // Two replicas of their own speeds at concurrency 2: replica 0 takes 0.8 ms + 90 us per
    // sample, replica 1 1 ms + 100 us (the lock-step pace, 1 ms + 100 us, is the slower one).
    Calibration c = synthetic(2);
    for (ComputePoint& p : c.compute)
      if (p.concurrent == 2) p.replica_s = {0.8e-3 + 0.9e-4 * double(p.batch), 1e-3 + 1e-4 * double(p.batch)};
    PredictOptions o{2, 128, 0, 20e-6};
    const double lockstep = find(predict_scaling(c, o), 2, "global").compute_s;
    QVERIFY(near(lockstep, 1e-3 + 64e-4));   // unchanged: the calibrated pace at b = 64
    o.scenario.balance = true;
    const auto balanced = predict_scaling(c, o);
    // T = (B + sum a_i / c_i) / sum 1 / c_i, with B = 128.
    const double t = (128 + 0.8e-3 / 0.9e-4 + 1e-3 / 1e-4) / (1 / 0.9e-4 + 1 / 1e-4);
    QVERIFY2(near(find(balanced, 2, "global").compute_s, t), qPrintable(QString::number(find(balanced, 2, "global").compute_s, 'g', 12)));
    QVERIFY(find(balanced, 2, "global").compute_s < lockstep);
    QCOMPARE(find(balanced, 1, "global").compute_s, find(predict_scaling(c, PredictOptions{2, 128, 0, 20e-6}), 1, "global").compute_s);
    // Equal replicas that each compute in 90 % of the pace: the other 10 % is step-to-step
    // variation, which balanced shares keep (T = 0.9 pace(64), plus 0.1 pace(64)).
    for (ComputePoint& p : c.compute)
      if (p.concurrent == 2) p.replica_s = {0.9 * p.step_s, 0.9 * p.step_s};
    QVERIFY(near(find(predict_scaling(c, o), 2, "global").compute_s, 1e-3 + 64e-4));
  }

  void a_straggler_sets_lock_steps_pace_and_balanced_shares_absorb_it() {
    // The simulated straggler x3 on equal replicas (no per-replica times: each at the
    // lock-step pace c(b) = a + k b, a = 1 ms, k = 0.1 ms): lock-step waits for 3 c(64);
    // balanced shares give T = (128 + a/k + 3a/(3k)) / (1/k + 1/(3k)) = 1.5 a + 96 k: half.
    const Calibration c = synthetic(2);
    PredictOptions o{2, 128, 0, 20e-6};
    o.scenario.straggler.replica = 1;
    o.scenario.straggler.factor = 3;
    const auto lock = predict_scaling(c, o);
    QVERIFY(near(find(lock, 2, "global").compute_s, 3 * (1e-3 + 64e-4)));
    QVERIFY(near(find(lock, 1, "global").compute_s, 1e-3 + 128e-4));   // replica 1 is not in a run of one
    o.scenario.balance = true;
    const auto bal = predict_scaling(c, o);
    const double a = 1e-3, k = 1e-4;
    const double t = (128 + a / k + 3 * a / (3 * k)) / (1 / k + 1 / (3 * k));
    QVERIFY(near(find(bal, 2, "global").compute_s, t));
    const double ratio = find(bal, 2, "global").compute_s / find(lock, 2, "global").compute_s;
    QVERIFY2(near(ratio, 0.5), qPrintable(QString::number(ratio, 'g', 12)));   // the bench measures 0.50-0.52
    // Without a straggler or per-replica times, balanced is lock-step (equal replicas, even shares).
    PredictOptions even{2, 128, 0, 20e-6};
    even.scenario.balance = true;
    QVERIFY(near(find(predict_scaling(c, even), 2, "global").compute_s, 1e-3 + 64e-4));
    o.scenario.straggler.factor = 0.5;
    QVERIFY_THROWS_EXCEPTION(ConfigError, predict_scaling(c, o));
  }

  void a_calibration_reads_back_what_it_wrote() {
    // The workbench keeps its calibration between launches as to_json writes it.
    Calibration c = synthetic(2);
    c.compute.back().replica_s = {1e-3, 2e-3};
    c.compute.back().optimizer_s = 0.25e-3;
    const Calibration back = calibration_from_json(nlohmann::json::parse(to_json(c).dump()));
    QCOMPARE(back.compute.back().replica_s, c.compute.back().replica_s);
    QCOMPARE(back.compute.back().optimizer_s, 0.25e-3);
    QCOMPARE(back.device, c.device);
    QCOMPARE(back.cores, c.cores);
    QCOMPARE(back.train_size, c.train_size);
    QCOMPARE(back.gradient_bytes, c.gradient_bytes);
    QCOMPARE(back.compute.size(), c.compute.size());
    QCOMPARE(back.allreduce.size(), c.allreduce.size());
    QVERIFY(back.powersgd.empty());
    c.powersgd = {{1, 2, 1.5e-3}, {4, 2, 3.0e-3}};
    c.gradient_pass = {{2, 0.2e-3}};
    const Calibration with_codec = calibration_from_json(nlohmann::json::parse(to_json(c).dump()));
    QCOMPARE(with_codec.powersgd.size(), std::size_t(2));
    QCOMPARE(with_codec.powersgd[1].rank, 4);
    QCOMPARE(with_codec.powersgd[1].concurrent, 2);
    QCOMPARE(with_codec.powersgd[1].seconds, 3.0e-3);
    QCOMPARE(with_codec.gradient_pass.size(), std::size_t(1));
    QCOMPARE(with_codec.gradient_pass[0].seconds, 0.2e-3);
    nlohmann::json bad = to_json(c);
    bad["powersgd"][0]["rank"] = 0;
    QVERIFY_THROWS_EXCEPTION(DataError, calibration_from_json(bad));
    const auto a = predict_scaling(c, PredictOptions{4, 128, 0, 20e-6});
    const auto b = predict_scaling(back, PredictOptions{4, 128, 0, 20e-6});
    for (std::size_t i = 0; i < a.size(); ++i) QCOMPARE(b[i].epoch_s, a[i].epoch_s);   // bit for bit
    QVERIFY_THROWS_EXCEPTION(DataError, calibration_from_json(nlohmann::json::parse(R"({"device": "x"})")));
    // A calibration saved before per-replica times still reads (every replica at the pace).
    nlohmann::json old = to_json(c);
    for (auto& p : old["compute"]) p.erase("replica_s");
    QVERIFY(calibration_from_json(old).compute.back().replica_s.empty());
  }

  void an_empty_calibration_is_refused() {
    Calibration c;
    c.cores = 2;
    QVERIFY_THROWS_EXCEPTION(ConfigError, predict_scaling(c, PredictOptions{}));
  }

  void a_real_calibration_is_sane() {
    CalibrateOptions o;
    o.batches = {8, 16};
    o.steps = 2;
    o.round_images = 0;   // quick: the floor of o.steps only
    o.max_concurrency = 2;
    const Calibration c = calibrate_cpu(o);
    QVERIFY(c.cores >= 1);
    QVERIFY(!c.compute.empty());
    for (const auto& p : c.compute) {
      QVERIFY(p.step_s > 0 && std::isfinite(p.step_s));
      QCOMPARE(int(p.replica_s.size()), p.concurrent);   // each replica's own time, without the wait
      for (double t : p.replica_s) QVERIFY(t > 0 && t <= p.step_s * 1.5);
      QVERIFY(p.optimizer_s > 0 && p.optimizer_s < p.step_s);   // Adam's part of the step
    }
    for (const auto& p : c.allreduce) QVERIFY(p.seconds > 0 && p.busbw_gbs() > 0);
    // The reference CNN compresses at ranks 1 and 4: its codec timed alone and with every core.
    QCOMPARE(c.powersgd.size(), std::size_t(c.cores > 1 ? 4 : 2));
    for (const auto& p : c.powersgd) QVERIFY(p.seconds > 0 && std::isfinite(p.seconds) && p.seconds < 0.1);
    QCOMPARE(c.gradient_pass.size(), std::size_t(c.cores > 1 ? 2 : 1));
    for (const auto& p : c.gradient_pass) QVERIFY(p.seconds > 0 && p.seconds < 0.1);
    const auto ps = predict_scaling(c, PredictOptions{2, 16, 0, 20e-6});
    for (const auto& p : ps) QVERIFY(p.epoch_s > 0 && std::isfinite(p.epoch_s));
  }
};

QTEST_GUILESS_MAIN(TestScaling)
#include "test_scaling.moc"

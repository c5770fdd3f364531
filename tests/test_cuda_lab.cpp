// The CUDA kernel lab's CPU half (bench/cuda_lab/lab_cases.h), here without a GPU: the stage
// references a kernel is checked against compose to the reference engine's gradients (so a
// kernel that matches its stage is right), the fused emulator stepped kernel by kernel ends
// at the same gradients, the case list covers every own kernel, fused kernel and library call
// of the step with the model's FLOP count and a stated tolerance (exact where the operations
// are the reference's), every case is validated before it is timed (an in-place kernel
// relaunched by the timing would otherwise fail: issue 30), and the comparison, rates, report
// and the parts' summary lines behave (including failing and errors).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/reference/layers.h"
#include "backends/reference/reference_net.h"
#include "cnn_fixtures.h"
#include "lab_cases.h"
#include "model/cnn_spec.h"

using namespace mb;
using namespace mb::lab;

class TestCudaLab : public QObject {
  Q_OBJECT

 private slots:
  void stages_compose_to_the_reference_gradients_data() {
    QTest::addColumn<int>("n");
    QTest::newRow("3 samples") << 3;
    QTest::newRow("64 samples") << 64;
  }
  void stages_compose_to_the_reference_gradients() {
    QFETCH(int, n);
    const CudnnStages s = make_cudnn_stages(n, 5);
    QCOMPARE(s.x.size(), std::size_t(n) * cnn::kImagePixels);
    QCOMPARE(s.p1.size(), std::size_t(n) * 32 * 169);
    QCOMPARE(s.dc2.size(), std::size_t(n) * 64 * 121);
    std::vector<uint8_t> labels(s.labels.begin(), s.labels.end());
    std::vector<float> want(cnn::kReferenceParams);
    ReferenceWorkspace ws;
    const BatchStats r =
        reference_forward_backward(s.params.data(), s.x.data(), labels.data(), n, s.grad_scale, want.data(), ws);
    QVERIFY2(within(s.loss_sum, r.loss_sum, {1e-9, 1e-6}),
             qPrintable(QString("%1 vs %2").arg(s.loss_sum, 0, 'g', 12).arg(r.loss_sum, 0, 'g', 12)));
    QCOMPARE(s.correct, double(r.correct));
    // The stages add the biases in float after a bias-free convolution; the engine in its
    // double sums: a few float roundings apart, no more.
    const std::string bad = test::tensor_mismatch(s.grads(), want, 1e-5, 1e-4, "stage gradient");
    QVERIFY2(bad.empty(), bad.c_str());
    // Ties on purpose: conv1 channels 0-7 are constant, every window a 4-way tie.
    QCOMPARE(int(s.a1[0]), 0);
  }

  void fused_emulator_steps_to_the_same_gradients() {
    const CudnnStages s = make_cudnn_stages(7, 11);
    FusedState f(s);
    for (int k = 0; k < fused::kFusedKernels; ++k) fused::emulate_kernel(static_cast<fused::FusedKernel>(k), f.args());
    const std::string bad = test::tensor_mismatch(f.grads, s.grads(), 5e-4, 5e-3, "fused gradient");
    QVERIFY2(bad.empty(), bad.c_str());
    QVERIFY(within(f.stats[0], s.loss_sum, {1e-6, 1e-5}));
    // Every kernel names what it writes.
    for (int k = 0; k < fused::kFusedKernels; ++k) {
      const auto outs = fused_float_outputs(static_cast<fused::FusedKernel>(k), f);
      QVERIFY(!outs.empty());
      for (const auto& o : outs) QVERIFY2(!o.values.empty(), o.name.c_str());
    }
    QCOMPARE(fused_byte_outputs(fused::FusedKernel::Conv2Fwd, f).front().size(), std::size_t(7) * 1600);
    QCOMPARE(fused_int_outputs(fused::FusedKernel::Conv1Fwd, f).front()[3], s.idx[3]);
  }

  void cases_cover_the_step() {
    for (Precision p : {Precision::Fp32, Precision::Tf32}) {
      const int n = 128;
      const auto cases = lab_cases(n, p);
      std::set<std::string> names;
      std::map<Group, int> per_group;
      double library_flops = 0;
      for (const CaseSpec& c : cases) {
        QVERIFY2(names.insert(c.name).second, c.name.c_str());
        ++per_group[c.group];
        QVERIFY2(c.flops >= 0 && c.bytes > 0, c.name.c_str());
        QVERIFY2(std::string(c.tol.why).size() > 10, c.name.c_str());  // every tolerance says why
        if (c.group == Group::Cudnn || c.group == Group::Cublas) library_flops += c.flops;
      }
      QCOMPARE(per_group[Group::OwnKernel], 12);
      QCOMPARE(per_group[Group::Cudnn], 5);
      QCOMPARE(per_group[Group::Cublas], 6);
      QCOMPARE(per_group[Group::Fused], fused::kFusedKernels);
      QCOMPARE(per_group[Group::Step], 2);
      for (int k = 0; k < fused::kFusedKernels; ++k)
        QVERIFY(names.count(fused::fused_kernel_name(static_cast<fused::FusedKernel>(k))));
      // The library calls are the whole step's arithmetic, the model's own count.
      QVERIFY(within(library_flops, n * ModelSpec{}.train_flops_per_image(), {0, 1e-12}));
      QCOMPARE(find_case(cases, "gather + normalise").tol.rtol, 0.0);  // exact kernels are held exactly
      QCOMPARE(find_case(cases, "conv2 bias + ReLU + pool").tol.atol_scale, 0.0);
      const double lib = find_case(cases, "cuDNN conv2 forward").tol.rtol;
      QVERIFY(p == Precision::Tf32 ? lib >= 1e-2 : lib <= 5e-3);
      QVERIFY(find_case(cases, "cuDNN conv2 forward").tensor_math == (p == Precision::Tf32));
    }
    QVERIFY_THROWS_EXCEPTION(Error, find_case(lab_cases(8, Precision::Fp32), "no such case"));
    const auto full = lab_batches(false);
    QVERIFY(std::count(full.begin(), full.end(), 64) && std::count(full.begin(), full.end(), 128));
    QVERIFY(lab_batches(true).size() < full.size());
  }

  void comparison_passes_and_fails() {
    const CaseTolerance tol{1e-3, 1e-2, "test"};
    const std::vector<float> want = {1.0f, -2.0f, 0.0f, 100.0f};
    QVERIFY(compare(want, want, tol).passed);
    QCOMPARE(compare(want, want, tol).worst_ratio, 0.0);
    std::vector<float> near = want;
    near[1] = -2.01f;  // |d| = 0.01 <= 0.1 (atol = 1e-3 x 100) + 0.02
    QVERIFY(compare(near, want, tol).passed);
    std::vector<float> off = want;
    off[2] = 0.5f;  // beyond 0.1
    const Comparison c = compare(off, want, tol);
    QVERIFY(!c.passed);
    QCOMPARE(c.worst_index, std::size_t(2));
    QCOMPARE(c.mismatches, std::size_t(1));
    off[2] = std::numeric_limits<float>::quiet_NaN();
    QVERIFY(!compare(off, want, tol).passed);
    QVERIFY(!compare(std::vector<float>{1.0f}, want, tol).passed);  // sizes differ
    const CaseTolerance exact{0, 0, "exact"};
    std::vector<float> ulp = want;
    ulp[0] = std::nextafter(1.0f, 2.0f);
    QVERIFY(!compare(ulp, want, exact).passed);
    const std::vector<uint8_t> a = {0, 1, 2, 3}, b = {0, 1, 3, 3};
    QVERIFY(!compare_bytes(b, a, 0).passed);
    QVERIFY(compare_bytes(b, a, 1).passed);
    QVERIFY(!compare_ints(std::vector<int32_t>{1, 2}, std::vector<int32_t>{1, 3}).passed);
  }

  void rates_and_report() {
    CaseSpec c;
    c.name = "x";
    c.flops = 1e6;
    c.bytes = 4.8e6;
    Result r;
    r.name = "x";
    r.n = 128;
    r.validated = true;
    r.passed = false;
    r.detail = "h: 3 element(s) off";
    r.time_us = 1.0;
    const Peak peak;
    add_rates(r, c, peak);
    QVERIFY(within(r.gflops, 1000.0, {0, 1e-12}));
    QVERIFY(within(r.gbs, 4800.0, {0, 1e-12}));
    QVERIFY(within(r.peak_share, 1.0, {0, 1e-12}));  // memory-bound at the full 4.8 TB/s
    Result timed_only;
    timed_only.name = "y";
    const QString table = QString::fromStdString(format_table({r, timed_only}));
    QVERIFY(table.contains("FAIL"));
    QVERIFY(table.contains("h: 3 element(s) off"));
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(to_json({r, timed_only})));
    QVERIFY(doc.isArray());
    QCOMPARE(doc.array().size(), 2);
    QCOMPARE(doc.array()[0].toObject()["passed"].toBool(), false);
    QCOMPARE(doc.array()[0].toObject()["n"].toInt(), 128);
  }

  void validation_comes_before_timing() {
    // An in-place kernel, as Adam is: every launch doubles the buffer. Launched once, it holds
    // 2; the timing relaunches it 22 times. Validated first, the case passes; validated after
    // the timing, it would see 2^23 and fail.
    CaseSpec spec;
    spec.name = "in place";
    spec.tol = {0, 0, "exact"};
    spec.flops = 1;
    std::vector<float> device = {1.0f};
    auto launch = [&] { device[0] *= 2; };
    std::vector<std::string> order;
    launch();
    const Result r = validate_then_time(
        spec, 4,
        [&] {
          order.push_back("validate");
          return Checks{{"buffer", compare(device, std::vector<float>{2.0f}, spec.tol)}};
        },
        [&] {
          order.push_back("time");
          for (int i = 0; i < 22; ++i) launch();
          return 7.5;
        },
        Peak{});
    QCOMPARE(order, (std::vector<std::string>{"validate", "time"}));
    QVERIFY2(r.validated && r.passed, r.detail.c_str());
    QCOMPARE(r.time_us, 7.5);
    QCOMPARE(r.n, 4);
    QCOMPARE(device[0], float(1 << 23));  // the timing did relaunch it, after the validation
    // A validation that throws (a device error reading back) is never followed by timing.
    order.clear();
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, validate_then_time(
        spec, 4, [&]() -> Checks { throw std::runtime_error("read-back failed"); },
        [&] {
          order.push_back("time");
          return 1.0;
        },
        Peak{}));
    QVERIFY(order.empty());
  }

  void parts_summarise_checks_and_errors() {
    Result ok, bad, untimed;
    ok.validated = ok.passed = true;
    bad.validated = true;
    untimed.name = "not validated";
    const Result err = error_result(Group::Step, 128, "train steps", "nccl: rank 0 on cuda:0: init failed");
    QVERIFY(err.error && err.validated && !err.passed);
    QCOMPARE(err.n, 128);
    QVERIFY(QString::fromStdString(err.name).startsWith("train steps"));
    const PartSummary clean = summarize_part("own kernels", {ok, ok, untimed});
    QVERIFY(clean.clean());
    QCOMPARE(QString::fromStdString(format_summary(clean)), QString("own kernels: 2 of 2 checks passed"));
    const PartSummary failed = summarize_part("fused kernels", {ok, bad});
    QVERIFY(!failed.clean());
    QCOMPARE(QString::fromStdString(format_summary(failed)), QString("fused kernels: 1 of 2 checks passed"));
    const PartSummary stopped = summarize_part("train steps", {ok, err});
    QVERIFY(!stopped.clean());
    QCOMPARE(stopped.checks, 1);  // an error is not a check
    QCOMPARE(stopped.errors, 1);
    QVERIFY(QString::fromStdString(format_summary(stopped)).contains("1 of 1 checks passed, then 1 error(s)"));
    QVERIFY(QString::fromStdString(format_table({err})).contains("ERROR"));
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(to_json({ok, err})));
    QCOMPARE(doc.array()[0].toObject()["error"].toBool(), false);
    QCOMPARE(doc.array()[1].toObject()["error"].toBool(), true);
    QVERIFY(doc.array()[1].toObject()["detail"].toString().contains("init failed"));
  }
};

QTEST_GUILESS_MAIN(TestCudaLab)
#include "test_cuda_lab.moc"

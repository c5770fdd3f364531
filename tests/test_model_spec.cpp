// Tests of the fixed CNN's parameter layout (names, shapes, offsets, count) and of the
// Keras-default initialisation (Glorot-uniform kernels, zero biases, seed-deterministic).
#include <QtTest>

#include <cmath>
#include <vector>

#include "model/cnn_spec.h"
#include "util/error.h"
#include "util/tolerance.h"

using namespace mb;

class TestModelSpec : public QObject {
  Q_OBJECT

 private slots:
  void parameter_count();
  void layout_data();
  void layout();
  void offsets_contiguous();
  void init_deterministic();
  void biases_zero();
  void glorot_limits_data();
  void glorot_limits();
  void init_rejects_wrong_size();
  void flops_per_image();
};

void TestModelSpec::parameter_count() {
  std::size_t total = 0;
  for (const auto& p : cnn::param_tensors()) total += p.size;
  QCOMPARE(total, std::size_t(121930));
  QCOMPARE(cnn::kParamCount, std::size_t(121930));
  QCOMPARE(cnn::param_tensors().size(), std::size_t(cnn::kNumParamTensors));
}

void TestModelSpec::layout_data() {
  QTest::addColumn<int>("id");
  QTest::addColumn<QString>("name");
  QTest::addColumn<QList<qlonglong>>("shape");
  QTest::addColumn<int>("fanIn");
  QTest::addColumn<int>("fanOut");
  // The documented order and PyTorch layouts (conv OIHW, dense [out, in]); Keras fans:
  // conv fan_in = in*kh*kw, fan_out = out*kh*kw.
  QTest::newRow("conv1.weight") << int(cnn::kConv1W) << "conv1.weight" << QList<qlonglong>{32, 1, 3, 3} << 9 << 288;
  QTest::newRow("conv1.bias") << int(cnn::kConv1B) << "conv1.bias" << QList<qlonglong>{32} << 0 << 0;
  QTest::newRow("conv2.weight") << int(cnn::kConv2W) << "conv2.weight" << QList<qlonglong>{64, 32, 3, 3} << 288 << 576;
  QTest::newRow("conv2.bias") << int(cnn::kConv2B) << "conv2.bias" << QList<qlonglong>{64} << 0 << 0;
  QTest::newRow("fc1.weight") << int(cnn::kFc1W) << "fc1.weight" << QList<qlonglong>{64, 1600} << 1600 << 64;
  QTest::newRow("fc1.bias") << int(cnn::kFc1B) << "fc1.bias" << QList<qlonglong>{64} << 0 << 0;
  QTest::newRow("fc2.weight") << int(cnn::kFc2W) << "fc2.weight" << QList<qlonglong>{10, 64} << 64 << 10;
  QTest::newRow("fc2.bias") << int(cnn::kFc2B) << "fc2.bias" << QList<qlonglong>{10} << 0 << 0;
}

void TestModelSpec::layout() {
  QFETCH(int, id);
  QFETCH(QString, name);
  QFETCH(QList<qlonglong>, shape);
  QFETCH(int, fanIn);
  QFETCH(int, fanOut);
  const auto& p = cnn::param_tensors()[static_cast<std::size_t>(id)];
  QCOMPARE(QString::fromUtf8(p.name.data(), qsizetype(p.name.size())), name);
  QCOMPARE(p.rank, int(shape.size()));
  std::size_t n = 1;
  for (int d = 0; d < p.rank; ++d) {
    QCOMPARE(qlonglong(p.shape[std::size_t(d)]), shape[d]);
    n *= std::size_t(shape[d]);
  }
  QCOMPARE(p.size, n);
  QCOMPARE(p.fan_in, fanIn);
  QCOMPARE(p.fan_out, fanOut);
}

void TestModelSpec::offsets_contiguous() {
  std::size_t expected = 0;
  for (const auto& p : cnn::param_tensors()) {
    QCOMPARE(p.offset, expected);
    expected += p.size;
  }
  QCOMPARE(expected, cnn::kParamCount);
}

void TestModelSpec::init_deterministic() {
  std::vector<float> a(cnn::kParamCount), b(cnn::kParamCount, 123.0f), c(cnn::kParamCount);
  cnn::init_params(a, 42);
  cnn::init_params(b, 42);
  cnn::init_params(c, 43);
  QVERIFY(a == b);   // exact, including every bit
  // Different seeds differ in (nearly) every kernel weight, not just somewhere.
  std::size_t same = 0, kernel = 0;
  for (const auto& p : cnn::param_tensors()) {
    if (p.fan_in == 0) continue;
    kernel += p.size;
    for (std::size_t i = p.offset; i < p.offset + p.size; ++i) same += (a[i] == c[i]);
  }
  QVERIFY2(same < kernel / 1000, qPrintable(QString("%1 of %2 kernel weights equal across seeds").arg(same).arg(kernel)));
}

void TestModelSpec::biases_zero() {
  std::vector<float> w(cnn::kParamCount, 7.0f);   // init must overwrite, not assume zeroed memory
  cnn::init_params(w, 5);
  for (const auto& p : cnn::param_tensors()) {
    if (p.fan_in != 0) continue;
    for (std::size_t i = p.offset; i < p.offset + p.size; ++i) {
      QCOMPARE(w[i], 0.0f);
      QVERIFY(!std::signbit(w[i]));
    }
  }
}

void TestModelSpec::glorot_limits_data() {
  QTest::addColumn<int>("id");
  for (int id : {cnn::kConv1W, cnn::kConv2W, cnn::kFc1W, cnn::kFc2W})
    QTest::newRow(std::string(cnn::param_tensors()[std::size_t(id)].name).c_str()) << id;
}

void TestModelSpec::glorot_limits() {
  QFETCH(int, id);
  const auto& p = cnn::param_tensors()[std::size_t(id)];
  std::vector<float> w(cnn::kParamCount);
  cnn::init_params(w, 2024);
  const double limit = std::sqrt(6.0 / (p.fan_in + p.fan_out));
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (std::size_t i = p.offset; i < p.offset + p.size; ++i) {
    const double x = w[i];
    QVERIFY2(std::fabs(x) <= limit, qPrintable(QString("|w[%1]| = %2 > limit %3").arg(i).arg(x).arg(limit)));
    sum += x;
    sum_sq += x * x;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  const double n = double(p.size);
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  // U(-a, a) has variance a^2/3; the sample variance's relative standard error is
  // ~0.9/sqrt(n): 0.7% for conv2 (18,432), 0.3% for fc1. 5% is > 7 sigma there; the small
  // tensors get a looser bound (conv1: 288 values, sigma ~5%).
  const double expected_var = limit * limit / 3.0;
  const double tol = p.size >= 10000 ? 0.05 : 0.25;
  QVERIFY2(within(var, expected_var, {0, tol}),
           qPrintable(QString("variance %1, expected %2").arg(var).arg(expected_var)));
  QVERIFY2(std::fabs(mean) < (p.size >= 10000 ? 0.05 : 0.2) * limit, qPrintable(QString("mean %1").arg(mean)));
  // The values fill the range rather than clustering: the largest is near the limit.
  QVERIFY(max_abs > 0.9 * limit);
}

void TestModelSpec::init_rejects_wrong_size() {
  std::vector<float> w(cnn::kParamCount - 1);
  QVERIFY_THROWS_EXCEPTION(mb::Error, cnn::init_params(w, 1));
}

void TestModelSpec::flops_per_image() {
  // By hand: conv1 2*26*26*32*9 = 389,376; conv2 2*11*11*64*32*9 = 4,460,544; fc1 2*1600*64
  // = 204,800; fc2 2*64*10 = 1,280. Backward is 2x forward except conv1 (no grad-input).
  QCOMPARE(cnn::train_flops_per_image(), 389376.0 * 2 + (4460544.0 + 204800.0 + 1280.0) * 3);
}

QTEST_GUILESS_MAIN(TestModelSpec)
#include "test_model_spec.moc"

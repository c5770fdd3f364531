// Tests of the fixed CNN's parameter layout (names, shapes, offsets, count) and of the
// Keras-default initialisation (Glorot-uniform kernels, zero biases, seed-deterministic).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cnn_spec.h"
#include "model/model_spec.h"
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
  // The model as a value (model/model_spec.h): what-if dense widths.
  void presets_data();
  void presets();
  void reference_layout_is_width_64();
  void model_text_round_trips();
  void model_text_rejects_data();
  void model_text_rejects();
  void model_with_params_inverts_the_count();
};

void TestModelSpec::parameter_count() {
  std::size_t total = 0;
  for (const auto& p : cnn::param_tensors()) total += p.size;
  QCOMPARE(total, std::size_t(121930));
  QCOMPARE(cnn::kReferenceParams, std::size_t(121930));
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
  QCOMPARE(expected, cnn::kReferenceParams);
}

void TestModelSpec::init_deterministic() {
  std::vector<float> a(cnn::kReferenceParams), b(cnn::kReferenceParams, 123.0f), c(cnn::kReferenceParams);
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
  std::vector<float> w(cnn::kReferenceParams, 7.0f);   // init must overwrite, not assume zeroed memory
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
  std::vector<float> w(cnn::kReferenceParams);
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
  std::vector<float> w(cnn::kReferenceParams - 1);
  QVERIFY_THROWS_EXCEPTION(mb::Error, cnn::init_params(w, 1));
}

void TestModelSpec::flops_per_image() {
  // By hand: conv1 2*26*26*32*9 = 389,376; conv2 2*11*11*64*32*9 = 4,460,544; fc1 2*1600*64
  // = 204,800; fc2 2*64*10 = 1,280. Backward is 2x forward except conv1 (no grad-input).
  QCOMPARE(cnn::train_flops_per_image(), 389376.0 * 2 + (4460544.0 + 204800.0 + 1280.0) * 3);
}

// Per preset: the name, 18,826 + 1,611 N parameters, the layout's dense shapes, contiguous
// offsets whose conv part is the reference's, the init's size check and the FLOPs.
void TestModelSpec::presets_data() {
  QTest::addColumn<int>("hidden");
  QTest::addColumn<QString>("name");
  QTest::addColumn<qlonglong>("params");
  QTest::newRow("reference") << 64 << "cnn-reference" << 121930LL;
  QTest::newRow("dense1024") << 1024 << "cnn-dense1024" << 1668490LL;
  QTest::newRow("dense4096") << 4096 << "cnn-dense4096" << 6617482LL;
  QTest::newRow("dense8192") << 8192 << "cnn-dense8192" << 13216138LL;
  QTest::newRow("dense1") << 1 << "cnn-dense1" << 20437LL;
}

void TestModelSpec::presets() {
  QFETCH(int, hidden);
  QFETCH(QString, name);
  QFETCH(qlonglong, params);
  const ModelSpec m{hidden};
  QCOMPARE(QString::fromStdString(m.name()), name);
  QCOMPARE(qlonglong(m.param_count()), params);
  QCOMPARE(m.gradient_bytes(), double(params) * 4);
  const cnn::ParamLayout layout = cnn::param_layout(hidden);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < layout.size(); ++i) {
    QCOMPARE(layout[i].offset, offset);
    if (i < cnn::kFc1W) QCOMPARE(layout[i].offset, cnn::param_tensors()[i].offset);   // conv part unchanged
    offset += layout[i].size;
  }
  QCOMPARE(qlonglong(offset), params);
  QCOMPARE(layout[cnn::kFc1W].shape[0], int64_t(hidden));
  QCOMPARE(layout[cnn::kFc1W].shape[1], int64_t(1600));
  QCOMPARE(layout[cnn::kFc2W].shape[1], int64_t(hidden));
  QCOMPARE(layout[cnn::kFc1W].fan_out, hidden);
  std::vector<float> w(m.param_count());
  cnn::init_params(w, 3, hidden);
  QVERIFY_THROWS_EXCEPTION(mb::Error, cnn::init_params(w, 3, hidden + 1));
  const double dense = 2.0 * 1600 * hidden + 2.0 * hidden * 10;
  QCOMPARE(cnn::train_flops_per_image(hidden), 389376.0 * 2 + (4460544.0 + dense) * 3);
  const bool listed = std::any_of(model_presets().begin(), model_presets().end(),
                                  [&](const ModelPreset& p) { return p.model == m; });
  QCOMPARE(listed, hidden != 1);
}

// The reference is the default and width 64; its initial weights are those of before the
// width became a value (the golden digests test the whole run).
void TestModelSpec::reference_layout_is_width_64() {
  QVERIFY(ModelSpec{}.is_reference());
  QCOMPARE(ModelSpec{}.hidden, 64);
  const cnn::ParamLayout l64 = cnn::param_layout(64);
  for (std::size_t i = 0; i < l64.size(); ++i) {
    QVERIFY(l64[i].name == cnn::param_tensors()[i].name);
    QCOMPARE(l64[i].offset, cnn::param_tensors()[i].offset);
    QCOMPARE(l64[i].size, cnn::param_tensors()[i].size);
  }
  std::vector<float> a(cnn::kReferenceParams), b(cnn::kReferenceParams);
  cnn::init_params(a, 9);
  cnn::init_params(b, 9, ModelSpec{}.hidden);
  QVERIFY(a == b);
}

void TestModelSpec::model_text_round_trips() {
  for (const ModelPreset& p : model_presets()) {
    QVERIFY(model_from_text(model_text(p.model)) == p.model);
    QVERIFY(model_from_text(p.model.name()) == p.model);   // the record's name reads back too
  }
  QVERIFY(model_text(ModelSpec{}) == "reference");
  QVERIFY(model_text(ModelSpec{4096}) == "dense:4096");
  QVERIFY(model_from_text("dense:64") == ModelSpec{});   // width 64 is the reference
  QCOMPARE(model_from_text("dense:16384").hidden, kMaxHidden);
}

void TestModelSpec::model_text_rejects_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("message");
  QTest::newRow("word") << "wide" << "--model: 'wide' is not a model";
  QTest::newRow("empty width") << "dense:" << "is not a model";
  QTest::newRow("junk") << "dense:12x" << "is not a model";
  QTest::newRow("zero") << "dense:0" << "out of range (must be in 1..16384)";
  QTest::newRow("too wide") << "dense:16385" << "out of range";
  QTest::newRow("negative") << "dense:-4" << "out of range";
}

void TestModelSpec::model_text_rejects() {
  QFETCH(QString, text);
  QFETCH(QString, message);
  try {
    model_from_text(text.toStdString());
    QFAIL("accepted");
  } catch (const ConfigError& e) {
    QVERIFY2(QString(e.what()).contains(message), e.what());
  }
}

void TestModelSpec::model_with_params_inverts_the_count() {
  for (int h : {1, 64, 1024, 4096, 8192, kMaxHidden}) QVERIFY(model_with_params(ModelSpec{h}.param_count()) == ModelSpec{h});
  QVERIFY(!model_with_params(cnn::kReferenceParams - 1).has_value());
  QVERIFY(!model_with_params(18826).has_value());
  QVERIFY(!model_with_params(ModelSpec{kMaxHidden}.param_count() + 1611).has_value());
}

QTEST_GUILESS_MAIN(TestModelSpec)
#include "test_model_spec.moc"

// Tests of the model as data: the reference CNN's parameter layout (names, shapes, offsets,
// count), shapes inferred for any layer list, the one-line text and its presets, refusals that
// name the layer, and the Keras-default initialisation (Glorot-uniform kernels, zero biases).
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/cnn_spec.h"
#include "model/init_params.h"
#include "model/model_spec.h"
#include "model/model_text.h"
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
  void generic_layout_matches_the_kernels();
  void shapes_inferred_data();
  void shapes_inferred();
  void memory_per_replica();
  // The model as a value (model/model_spec.h): what-if dense widths.
  void presets_data();
  void presets();
  void model_text_round_trips_data();
  void model_text_round_trips();
  void model_text_rejects_data();
  void model_text_rejects();
  void legacy_names_and_counts();
};

// The inferred layout against the count the seed's Keras model.summary() prints (the constant
// cnn::kReferenceParams is checked by a static_assert; this checks infer_shape).
void TestModelSpec::parameter_count() {
  std::size_t total = 0;
  for (const auto& p : cnn::param_tensors()) total += p.size;
  QCOMPARE(total, std::size_t(121930));
  QCOMPARE(ModelSpec().param_count(), std::size_t(121930));
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
  init_params(ModelSpec{}, a, 42);
  init_params(ModelSpec{}, b, 42);
  init_params(ModelSpec{}, c, 43);
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
  init_params(ModelSpec{}, w, 5);
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
  init_params(ModelSpec{}, w, 2024);
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
  QVERIFY_THROWS_EXCEPTION(mb::Error, init_params(ModelSpec{}, w, 1));
}

void TestModelSpec::flops_per_image() {
  // By hand: conv1 2*26*26*32*9 = 389,376; conv2 2*11*11*64*32*9 = 4,460,544; fc1 2*1600*64
  // = 204,800; fc2 2*64*10 = 1,280. Backward is 2x forward except conv1 (no grad-input).
  QCOMPARE(ModelSpec{}.train_flops_per_image(), 389376.0 * 2 + (4460544.0 + 204800.0 + 1280.0) * 3);
  // mlp: no layer below the first needs... the first dense has no input gradient.
  const double mlp = 2.0 * (784 * 256 + 256 * 128 + 128 * 64 + 64 * 10);
  QCOMPARE(model_from_text("mlp").train_flops_per_image(), mlp * 3 - 2.0 * 784 * 256);
}

// The generic layout (model_shape.h) is the one the own kernels index with cnn_shape.h's
// constants: the same offsets, names and shapes for every width of the family.
void TestModelSpec::generic_layout_matches_the_kernels() {
  for (int width : {1, 64, 1024}) {
    const ModelSpec model = reference_family(width);
    const auto& generic = model.shape().params;
    const auto fixed = cnn::param_layout(width);
    QCOMPARE(generic.size(), fixed.size());
    for (std::size_t i = 0; i < generic.size(); ++i) {
      QCOMPARE(QString::fromStdString(generic[i].name), QString::fromStdString(std::string(fixed[i].name)));
      QCOMPARE(generic[i].offset, fixed[i].offset);
      QCOMPARE(generic[i].size, fixed[i].size);
    }
    QCOMPARE(reference_family(width).param_count(), std::size_t(18826 + 1611 * width));
  }
}

void TestModelSpec::shapes_inferred_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("outputs");   // each layer's output, HxWxC or N
  QTest::addColumn<qlonglong>("params");
  QTest::newRow("reference") << "reference" << "26x26x32 13x13x32 11x11x64 5x5x64 64 10" << 121930LL;
  QTest::newRow("same padding keeps the size") << "conv4@5s-dense10" << "28x28x4 10" << (4 * 25 + 4 + 28 * 28 * 4 * 10 + 10LL);
  QTest::newRow("pool@s rounds odd sides up") << "9x7x2:pool@s-avgpool-gap-dense3" << "5x4x2 2x2x2 2 3" << (2 * 3 + 3LL);
  QTest::newRow("valid pool rounds down") << "9x7x2:pool-dense2" << "4x3x2 2" << (24 * 2 + 2LL);
  QTest::newRow("no bias, linear") << "32x32x3:conv8@7_nobias_linear-flatten-drop50-dense5_nobias-dense2"
                                   << "26x26x8 5408 5408 5 2" << (8 * 3 * 49 + 5408 * 5 + 5 * 2 + 2LL);
  QTest::newRow("lenet5") << "lenet5" << "28x28x6 14x14x6 10x10x16 5x5x16 120 84 10" << 61706LL;
  QTest::newRow("cnn-cifar") << "cnn-cifar" << "32x32x32 30x30x32 15x15x32 15x15x64 13x13x64 6x6x64 512 10"
                             << 1250858LL;
}

void TestModelSpec::shapes_inferred() {
  QFETCH(QString, text);
  QFETCH(QString, outputs);
  QFETCH(qlonglong, params);
  const ModelSpec m = model_from_text(text.toStdString());
  QStringList got;
  for (const LayerShape& l : m.shape().layers)
    got << (l.flat_out ? QString::number(l.out.size()) : QString("%1x%2x%3").arg(l.out.h).arg(l.out.w).arg(l.out.c));
  QCOMPARE(got.join(' '), outputs);
  QCOMPARE(qlonglong(m.param_count()), params);
  QCOMPARE(m.gradient_bytes(), double(params) * 4);
  // The tensors tile the flat buffer in order, each named after its layer.
  std::size_t offset = 0;
  for (const ParamTensor& t : m.shape().params) {
    QCOMPARE(t.offset, offset);
    offset += t.size;
    QVERIFY(t.name.starts_with(m.shape().layers[std::size_t(t.layer)].name + "."));
  }
  QCOMPARE(offset, m.param_count());
}

// What a replica holds grows with the batch by the activations (and their gradients) only.
void TestModelSpec::memory_per_replica() {
  const ModelSpec model;
  const ModelShape& s = model.shape();
  const double state = 4.0 * double(s.param_count) * 4;   // params, grads, Adam's m and v
  QVERIFY(s.memory_bytes(1) > state);
  QCOMPARE(s.memory_bytes(256) - s.memory_bytes(128), s.memory_bytes(128) - s.memory_bytes(0));
  QCOMPARE(s.memory_bytes(0), state);
}

void TestModelSpec::presets_data() {
  QTest::addColumn<QString>("name");
  for (const ModelPreset& p : model_presets()) QTest::newRow(std::string(p.name).c_str()) << QString::fromUtf8(p.name.data());
}

// Every preset reads, names itself, and its text reads back to the same model.
void TestModelSpec::presets() {
  QFETCH(QString, name);
  const ModelSpec m = model_from_text(name.toStdString());
  QCOMPARE(QString::fromStdString(m.name()), name);
  QVERIFY(model_from_text(m.text()) == m);
  QCOMPARE(m.is_reference(), name == "reference");
  QVERIFY(model_presets().front().name == "reference");
}

void TestModelSpec::model_text_round_trips_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QString>("canonical");
  QTest::newRow("reference") << "conv32-pool-conv64-pool-dense64-dense10" << "conv32-pool-conv64-pool-dense64-dense10";
  QTest::newRow("28x28x1 omitted") << "28x28x1:dense8-dense10" << "dense8-dense10";
  QTest::newRow("3x3 valid is plain") << "conv8@3-dense10" << "conv8-dense10";
  QTest::newRow("flags") << "conv8@5s_linear_nobias-pool@s-drop12.5-dense4_nobias-dense3_linear"
                         << "conv8@5s_linear_nobias-pool@s-drop12.5-dense4_nobias-dense3";
  QTest::newRow("colour") << "32x32x3:conv4-gap-dense10" << "32x32x3:conv4-gap-dense10";
  QTest::newRow("dense alias") << "dense:4096" << "conv32-pool-conv64-pool-dense4096-dense10";
}

void TestModelSpec::model_text_round_trips() {
  QFETCH(QString, text);
  QFETCH(QString, canonical);
  const ModelSpec m = model_from_text(text.toStdString());
  QCOMPARE(QString::fromStdString(model_text(m)), canonical);
  QVERIFY(model_from_text(model_text(m)) == m);
}

// Each row: a text and the words its ConfigError must contain (the layer, its word, why).
void TestModelSpec::model_text_rejects_data() {
  QTest::addColumn<QString>("text");
  QTest::addColumn<QStringList>("words");
  QTest::newRow("empty") << "" << QStringList{"--model", "empty"};
  QTest::newRow("unknown word") << "conv8-lstm-dense10" << QStringList{"layer 2", "'lstm'", "not a layer"};
  QTest::newRow("even kernel") << "conv8@4-dense10" << QStringList{"layer 1", "conv8@4", "odd"};
  QTest::newRow("kernel larger than input") << "5x5x1:conv8@7-dense10" << QStringList{"layer 1", "larger"};
  QTest::newRow("pool of one pixel") << "1x1x3:pool-dense10" << QStringList{"layer 1", "pool"};
  QTest::newRow("conv after flatten") << "dense8-conv4-dense10" << QStringList{"layer 2", "conv4"};
  QTest::newRow("last not dense") << "conv8-gap" << QStringList{"gap", "last layer"};
  QTest::newRow("one class") << "dense8-dense1" << QStringList{"dense1"};
  QTest::newRow("drop 100") << "dense8-drop100-dense10" << QStringList{"drop100", "below 100"};
  QTest::newRow("bad flag") << "dense8_tanh-dense10" << QStringList{"_tanh", "flag"};
  QTest::newRow("double dash") << "dense8--dense10" << QStringList{"layer 2", "empty"};
  QTest::newRow("bad input") << "28x28:dense10" << QStringList{"HxWxC"};
  QTest::newRow("too many channels") << "28x28x500:dense10" << QStringList{"channels"};
  QTest::newRow("too wide") << "dense99999-dense10" << QStringList{"dense99999"};
  QTest::newRow("dense width") << "dense:0" << QStringList{"1..16384"};
}

void TestModelSpec::model_text_rejects() {
  QFETCH(QString, text);
  QFETCH(QStringList, words);
  try {
    model_from_text(text.toStdString());
    QFAIL("accepted");
  } catch (const ConfigError& e) {
    const QString what = QString::fromUtf8(e.what());
    for (const QString& w : words) QVERIFY2(what.contains(w), qPrintable(what + "  (missing: " + w + ")"));
  }
}

// Records and calibrations of older versions name models "cnn-reference", "cnn-denseN", or only
// by their parameter count: they read as the reference family.
void TestModelSpec::legacy_names_and_counts() {
  QVERIFY(model_from_text("cnn-reference") == ModelSpec{});
  QVERIFY(model_from_text("cnn-dense4096") == reference_family(4096));
  for (int width : {1, 64, 1024, 16384})
    QVERIFY(reference_family_with_params(reference_family(width).param_count()) == reference_family(width));
  QVERIFY(!reference_family_with_params(121931));
  QVERIFY(!reference_family_with_params(0));
  QCOMPARE(reference_family_width(model_from_text("lenet5")).has_value(), false);
  QCOMPARE(reference_family_width(reference_family(37)).value_or(0), 37);
}

QTEST_GUILESS_MAIN(TestModelSpec)
#include "test_model_spec.moc"

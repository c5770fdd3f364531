// The op-consistency test: every available backend against the reference engine (loss, hits,
// every gradient tensor, Adam, evaluation, empty batch) over several batch sizes, printing the
// worst difference of each check, the CPU engine also with each SIMD target forced; a matrix
// of seeded random small models (every layer kind and setting of the model grammar) x SIMD
// targets against the reference, the reference family on the generic per-layer plan, and the
// dropout key reaching both engines alike; the CPU engine's own kernels (conv1, conv2
// Winograd, pool2, Adam bit for bit) against the reference layers on every SIMD target; the
// engine's threading and argument checks; and the device-string grammar (parse_devices) as a
// data-driven table.
#include <QtTest>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "model/model_text.h"
#include "model/init_params.h"
#include "backends/devices.h"
#include "backends/registry.h"
#include "backends/onednn/adam_kernel.h"
#include "backends/onednn/pixel_scale.h"
#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/conv1_pool.h"
#include "backends/onednn/conv_wgrad.h"
#include "backends/onednn/layer_plan.h"
#include "backends/onednn/onednn_engine.h"
#include "backends/onednn/onednn_plan.h"
#include "backends/onednn/simd_target.h"
#include "backends/onednn/step_plan.h"
#include "backends/onednn/winograd_conv2.h"
#include "backends/reference/layers.h"
#include "backends/reference/reference_net.h"
#include "backends/selftest.h"
#include "config/train_options.h"
#include "model/cnn_spec.h"
#include "optim/adam.h"
#include "test_support.h"
#include "util/error.h"

using namespace mb;

namespace {

QString describe(const SelftestCase& c) {
  return QString("%1 %2 %3: max abs %4, max rel %5 (tol %6, floor %7)%8%9")
      .arg(QString::fromStdString(c.backend), QString::fromStdString(c.device), QString::fromStdString(c.what))
      .arg(c.max_abs_err, 0, 'g', 3)
      .arg(c.max_rel_err, 0, 'g', 3)
      .arg(c.tol, 0, 'g', 2)
      .arg(c.abs_floor, 0, 'g', 3)
      .arg(c.pass ? "" : " FAIL ", QString::fromStdString(c.note));
}

// Element (n, c, h, w) of a [n, channels, side, side] tensor blocked by `block` (blocked_pool.h).
std::size_t blocked_at(int n, int c, int h, int w, int channels, int side, int block) {
  return ((((std::size_t(n) * (channels / block) + c / block) * side + h) * side + w) * block) + c % block;
}

// Values on a coarse grid in [-1, 1]: many exact ties and negatives, as after a ReLU.
std::vector<float> grid_values(std::size_t count, uint64_t seed) {
  std::vector<float> v(count);
  SplitMix64 rng(seed);
  for (auto& x : v) x = static_cast<float>(int(rng.below(9)) - 4) * 0.25f;
  return v;
}

std::vector<float> random_params(uint64_t seed) {
  std::vector<float> p(cnn::kReferenceParams);
  init_params(ModelSpec{}, p, seed);
  return p;
}

// One data row per SIMD target the CPU kernels were compiled for (column "target").
void add_simd_target_rows() {
  QTest::addColumn<QString>("target");
  for (const auto& t : onednn::simd_targets()) QTest::addRow("%s", t.name.c_str()) << QString::fromStdString(t.name);
}

bool simd_target_supported(const QString& name) {
  for (const auto& t : onednn::simd_targets())
    if (QString::fromStdString(t.name) == name) return t.supported;
  return false;
}

// The CPU kernels run on one target for the scope, on the best one again after it.
class ForcedSimdTarget {
 public:
  explicit ForcedSimdTarget(const QString& name) { onednn::force_simd_target(name.toStdString()); }
  ~ForcedSimdTarget() { onednn::force_simd_target(""); }
  ForcedSimdTarget(const ForcedSimdTarget&) = delete;
  ForcedSimdTarget& operator=(const ForcedSimdTarget&) = delete;
};

// ---- random models (ggml's test-backend-ops over the model grammar) ----
// A deterministic generator of small valid models in model_text.h's grammar: input 7..16 per
// side (height and width drawn apart: odd sides often), 1 or 3 channels, one to three conv
// blocks (kernel 1/3/5/7, valid or same, _linear/_nobias now and then) each followed by an
// optional max/average pooling (valid or same) and an optional dropout, then a head (gap, an
// explicit flatten, or a dense reading the image directly), up to two hidden dense layers
// with optional dropout between, and the logits (2..12 classes). Every sixth model is a pure
// dense net. It writes canonical text; the parser has the last word (a valid conv wider than
// its input, a valid pooling of one pixel): such a draw is refused, counted and drawn again.
struct RandomSpecs {
  std::vector<std::string> texts;   // accepted, canonical (model_text(model_from_text(t)) == t)
  int refused = 0;                  // draws the parser refused
  std::vector<std::string> refusals;
};

std::string random_spec_text(SplitMix64& rng, int k) {
  static constexpr int kKernels[] = {1, 3, 5, 7};
  static constexpr const char* kRates[] = {"0", "10", "12.5", "25", "37.5", "50", "80"};
  static constexpr int kClasses[] = {2, 3, 5, 7, 10, 12};
  auto flags = [&](bool allow_linear) {
    std::string f;
    if (allow_linear && rng.below(4) == 0) f += "_linear";
    if (rng.below(4) == 0) f += "_nobias";
    return f;
  };
  auto maybe_dropout = [&](std::vector<std::string>& words, int one_in) {
    if (rng.below(uint64_t(one_in)) == 0) words.push_back(std::string("drop") + kRates[rng.below(std::size(kRates))]);
  };
  const int h = 7 + int(rng.below(10)), w = 7 + int(rng.below(10));
  const int c = k % 2 ? 3 : 1;
  std::vector<std::string> words;
  if (k % 6 == 5) {
    // A pure dense net: on the image directly or after an explicit flatten (and a dropout of
    // the input now and then).
    maybe_dropout(words, 4);
    if (rng.below(2)) words.push_back("flatten");
  } else {
    if (rng.below(8) == 0) words.push_back(rng.below(2) ? "pool@s" : "avgpool");   // a pooling of the input
    const int blocks = 1 + int(rng.below(3));
    for (int b = 0; b < blocks; ++b) {
      // The first block's kernel cycles through 1, 3, 5, 7 over the specs; the others' are drawn.
      const int kernel = b == 0 ? kKernels[(k / 2) % 4] : kKernels[rng.below(4)];
      const bool same = rng.below(2) == 0;
      // Mostly 2..8 filters (one partial channel block on AVX2/AVX-512), now and then 9..20
      // (whole blocks and a partial one).
      std::string conv = "conv" + std::to_string(rng.below(4) ? 2 + rng.below(7) : 9 + rng.below(12));
      if (kernel != 3 || same) conv += "@" + std::to_string(kernel) + (same ? "s" : "");
      words.push_back(conv + flags(true));
      // The first block's pooling cycles through the four and none; the others' are drawn.
      static constexpr const char* kPools[] = {"pool", "pool@s", "avgpool", "avgpool@s", "", ""};
      const char* pool = kPools[b == 0 ? k % 5 : int(rng.below(std::size(kPools)))];
      if (*pool) words.push_back(pool);
      maybe_dropout(words, 4);
    }
    switch (k % 3) {
      case 0: words.push_back("gap"); break;
      case 1: words.push_back("flatten"); break;
      default: break;   // the dense layer reads the image itself
    }
  }
  const int hidden = k % 6 == 5 ? 1 + int(rng.below(2)) : int(rng.below(3));   // pure dense nets: at least one
  for (int i = 0; i < hidden; ++i) {
    maybe_dropout(words, 3);
    words.push_back("dense" + std::to_string(3 + rng.below(22)) + flags(true));
  }
  maybe_dropout(words, 3);
  // The logits: linear by default (the canonical text says nothing), a bias unless _nobias.
  words.push_back("dense" + std::to_string(kClasses[rng.below(std::size(kClasses))]) + (rng.below(5) == 0 ? "_nobias" : ""));
  std::string text = std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + ":";
  for (std::size_t i = 0; i < words.size(); ++i) text += (i ? "-" : "") + words[i];
  return text;
}

// `count` accepted specs, deterministic for `seed`; draws stop at 20 x count (a generator the
// parser nearly always refuses shows as few texts and many refusals).
RandomSpecs random_specs(int count, uint64_t seed) {
  RandomSpecs out;
  for (int k = 0, draws = 0; int(out.texts.size()) < count && draws < 20 * count; ++draws) {
    SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull + uint64_t(draws));
    const std::string text = random_spec_text(rng, k);
    try {
      model_from_text(text);
      out.texts.push_back(text);
      ++k;
    } catch (const ConfigError& e) {
      ++out.refused;
      out.refusals.push_back(e.what());
    }
  }
  return out;
}

constexpr int kRandomSpecCount = 64;
constexpr uint64_t kRandomSpecSeed = 2024;
constexpr int kSpecsPerOtherTarget = 8;

// The matrix's specs: kRandomSpecCount of them, or more for a deeper search with
// MB_RANDOM_SPECS=N in the environment (as ggml's test-backend-ops takes its own sizes).
const RandomSpecs& matrix_specs() {
  static const RandomSpecs specs =
      random_specs(std::max(kRandomSpecCount, qEnvironmentVariableIntValue("MB_RANDOM_SPECS")), kRandomSpecSeed);
  return specs;
}

// What a set of specs exercises, per feature the matrix must cover (each count must be > 0).
std::map<std::string, int> spec_coverage(const std::vector<std::string>& texts) {
  std::map<std::string, int> c;
  for (const char* key :
       {"Conv2D", "MaxPooling2D", "AveragePooling2D", "GlobalAveragePooling2D", "Flatten", "Dense", "Dropout",
        "input 1 channel", "input 3 channels", "conv k1", "conv k3", "conv k5", "conv k7", "conv valid", "conv same",
        "conv _linear", "conv _nobias", "maxpool valid, odd side", "maxpool same, odd side",
        "avgpool valid, odd side", "avgpool same, odd side", "dense after conv/pool without flatten",
        "hidden dense _linear", "dense _nobias", "logits _nobias", "pure dense net", "classes other than 10",
        "dropout rates (3 or more distinct)", "dropout on an image", "dropout on a vector"})
    c[key] = 0;
  std::set<double> rates;
  for (const std::string& text : texts) {
    const ModelSpec model = model_from_text(text);
    const ModelShape& m = model.shape();
    ++c[m.input.c == 1 ? "input 1 channel" : m.input.c == 3 ? "input 3 channels" : "input other channels"];
    if (m.classes != 10) ++c["classes other than 10"];
    bool pure_dense = true;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
      const LayerShape& l = m.layers[i];
      ++c[std::string(keras_class(l.layer.kind))];
      const bool odd = l.in.h % 2 || l.in.w % 2;
      const bool same = l.layer.padding == Padding::Same;
      switch (l.layer.kind) {
        case LayerKind::Conv2D:
          pure_dense = false;
          ++c["conv k" + std::to_string(l.layer.kernel)];
          ++c[same ? "conv same" : "conv valid"];
          if (l.layer.activation == Activation::Linear) ++c["conv _linear"];
          if (!l.layer.bias) ++c["conv _nobias"];
          break;
        case LayerKind::MaxPool:
        case LayerKind::AvgPool:
          pure_dense = false;
          if (odd)
            ++c[std::string(l.layer.kind == LayerKind::MaxPool ? "maxpool" : "avgpool") + (same ? " same" : " valid") +
                ", odd side"];
          break;
        case LayerKind::GlobalAvgPool: pure_dense = false; break;
        case LayerKind::Dense:
          if (!l.flat_in && !pure_dense) ++c["dense after conv/pool without flatten"];
          if (i + 1 < m.layers.size() && l.layer.activation == Activation::Linear) ++c["hidden dense _linear"];
          if (!l.layer.bias) ++c[i + 1 < m.layers.size() ? "dense _nobias" : "logits _nobias"];
          break;
        case LayerKind::Dropout:
          rates.insert(l.layer.rate);
          ++c[l.flat_in ? "dropout on a vector" : "dropout on an image"];
          break;
        case LayerKind::Flatten: break;
      }
    }
    if (pure_dense) ++c["pure dense net"];
  }
  c["dropout rates (3 or more distinct)"] = rates.size() >= 3 ? int(rates.size()) : 0;
  return c;
}

// Conv1 inputs: images with an exact-zero background on the left (ties in the pool windows),
// random weights (OIHW and the kernel's [tap][channel]) and biases, and a pool-output gradient
// on a grid (plain nchw).
struct Conv1Case {
  std::vector<float> images, weights, taps, bias, d_pooled;
};

Conv1Case make_conv1_case(int n) {
  Conv1Case k;
  k.images.resize(std::size_t(n) * cnn::kImagePixels);
  SplitMix64 rng(21);
  for (std::size_t i = 0; i < k.images.size(); ++i)
    k.images[i] = (i % cnn::kImageSide) < 10 ? 0.0f : static_cast<float>(rng.next_unit());
  k.weights.resize(std::size_t(cnn::kConv1Out) * onednn::kConv1Taps);
  k.taps.resize(k.weights.size());
  k.bias.resize(cnn::kConv1Out);
  for (auto& x : k.weights) x = static_cast<float>(rng.next_unit() - 0.5);
  for (auto& x : k.bias) x = static_cast<float>(0.2 * (rng.next_unit() - 0.5));
  onednn::conv1_weights_to_taps(k.weights.data(), k.taps.data());
  k.d_pooled = grid_values(std::size_t(n) * cnn::kConv1Out * cnn::kPool1Side * cnn::kPool1Side, 5);
  return k;
}

// The first maximum (row-major) of pool window (ph, pw) in a [n, 32, 26, 26] conv1 output.
int window_argmax(const std::vector<float>& y, int s, int c, int ph, int pw) {
  constexpr int O = cnn::kConv1Side;
  const float* p = y.data() + ((std::size_t(s) * cnn::kConv1Out + c) * O + 2 * ph) * O + 2 * pw;
  const float v[4] = {p[0], p[1], p[O], p[O + 1]};
  int k = 0;
  for (int q = 1; q < 4; ++q)
    if (v[q] > v[k]) k = q;
  return k;
}

}  // namespace

class TestBackendOps : public QObject {
  Q_OBJECT

 private slots:
  // ---- every backend against the reference ----
  // Rows: backend (onednn or cuda), a CPU-engine variant, and the batch. The variants: the
  // default choice (conv2 on the own Winograd kernels); conv2 on oneDNN throughout (--cpu-conv2
  // onednn: its Winograd where it has one, or, onednn-direct, its direct kernels: what oneDNN
  // runs on CPUs without AVX-512); conv2 on the own Winograd explicitly; the own kernels forced
  // onto each SIMD target in turn; two intra-replica threads.
  void matches_reference_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<QString>("conv2");   // --cpu-conv2, "" for the default
    QTest::addColumn<QString>("simd");    // a forced SIMD target, "" for the best
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("threads");     // the oneDNN engine's intra-replica threads
    for (const QString& target : {QString("onednn"), QString("cuda")})
      for (int batch : {1, 3, 37, 64, 128})
        QTest::addRow("%s/batch=%d", qPrintable(target), batch) << target << "" << "" << batch << 1;
    QTest::addRow("onednn-direct/batch=37") << "onednn" << "onednn-direct" << "" << 37 << 1;
    QTest::addRow("onednn-conv2-onednn/batch=37") << "onednn" << "onednn" << "" << 37 << 1;
    for (int batch : {37, 128}) QTest::addRow("onednn-conv2-own/batch=%d", batch) << "onednn" << "own" << "" << batch << 1;
    // 7 images: whole and partial Winograd chunks in every pass.
    for (const auto& t : onednn::simd_targets())
      QTest::addRow("onednn-conv2-own@%s/batch=7", t.name.c_str())
          << "onednn" << "own" << QString::fromStdString(t.name) << 7 << 1;
    // Intra-replica threads: oneDNN's primitives and the own kernels split the batch.
    for (const QString& conv2 : {QString("onednn"), QString("own")})
      QTest::addRow("onednn-conv2-%s-threads=2/batch=37", qPrintable(conv2)) << "onednn" << conv2 << "" << 37 << 2;
  }
  void matches_reference() {
    QFETCH(QString, target);
    QFETCH(QString, conv2);
    QFETCH(QString, simd);
    QFETCH(int, batch);
    QFETCH(int, threads);
    if (target == "cuda") {
      const DeviceInventory inv = query_devices();
      if (inv.gpus.empty()) QSKIP(qPrintable("no GPU: " + QString::fromStdString(inv.gpu_note)));
    }
    if (!simd.isEmpty() && !simd_target_supported(simd)) QSKIP(qPrintable("this CPU cannot run " + simd));
    const std::unique_ptr<ForcedSimdTarget> forced = simd.isEmpty() ? nullptr : std::make_unique<ForcedSimdTarget>(simd);
    SelftestOptions opt;
    opt.targets = {target.toStdString()};
    opt.batches = {batch};
    opt.cpu_threads = threads;
    TrainConfig c;
    if (!conv2.isEmpty()) set_option(train_option("cpu_conv2"), c, conv2.toStdString());
    opt.engine = c.engine;
    const auto cases = run_selftest(opt);
    // Per target: loss/correct/samples, 8 gradient tensors, 2 Adam steps, the empty batch,
    // and evaluate on val and train (3 rows each).
    QVERIFY(!cases.empty());
    int failures = 0;
    for (const auto& c : cases) {
      qInfo().noquote() << describe(c);
      if (!c.pass) ++failures;
    }
    QCOMPARE(failures, 0);
    QVERIFY(cases.size() % 20 == 0);   // 20 rows per engine: nothing silently skipped
  }

  // Every what-if preset (and an odd width, no multiple of any vector) on every backend against
  // the reference: the dense layers are sized at run time everywhere, so the same 20 checks
  // per engine hold for every width. Batch 5: the reference at dense 8192 is slow.
  void matches_reference_per_model_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<int>("hidden");
    for (const QString& target : {QString("onednn"), QString("cuda")}) {
      for (int width : {1024, 4096, 8192})
        QTest::addRow("%s/dense:%d", qPrintable(target), width) << target << width;
      QTest::addRow("%s/cnn-dense37", qPrintable(target)) << target << 37;
    }
  }
  void matches_reference_per_model() {
    QFETCH(QString, target);
    QFETCH(int, hidden);
    if (target == "cuda") {
      const DeviceInventory inv = query_devices();
      if (inv.gpus.empty()) QSKIP(qPrintable("no GPU: " + QString::fromStdString(inv.gpu_note)));
    }
    SelftestOptions opt;
    opt.targets = {target.toStdString()};
    opt.batches = {5};
    opt.model = reference_family(hidden);
    const auto cases = run_selftest(opt);
    int failures = 0;
    for (const auto& c : cases)
      if (!c.pass) {
        qInfo().noquote() << describe(c);
        ++failures;
      }
    QCOMPARE(failures, 0);
    QVERIFY(!cases.empty() && cases.size() % 20 == 0);
  }

  // ---- random models: ggml's test-backend-ops matrix over the model grammar ----
  // The generator (random_spec_text) writes only what the parser accepts, canonically, and the
  // matrix's specs cover every layer kind and setting; refusals are counted, and a generator
  // the parser mostly refuses is wrong.
  void random_specs_cover_the_grammar() {
    const RandomSpecs& specs = matrix_specs();
    QCOMPARE(int(specs.texts.size()), std::max(kRandomSpecCount, qEnvironmentVariableIntValue("MB_RANDOM_SPECS")));
    qInfo("%d specs accepted, %d draws refused", int(specs.texts.size()), specs.refused);
    for (const std::string& why : specs.refusals) qInfo("  refused: %s", why.c_str());
    QVERIFY2(specs.refused < int(specs.texts.size()), "the parser refused most of the generator's specs");
    for (std::size_t k = 0; k < specs.texts.size(); ++k) {
      const std::string& text = specs.texts[k];
      qInfo("  spec %02zu: %s", k, text.c_str());
      QCOMPARE(QString::fromStdString(model_text(model_from_text(text))), QString::fromStdString(text));
    }
    // Distinct specs: a generator stuck on one model tests one model.
    QCOMPARE(std::set<std::string>(specs.texts.begin(), specs.texts.end()).size(), specs.texts.size());
    for (const auto& [feature, count] : spec_coverage(specs.texts)) {
      qInfo("  %-40s %d", feature.c_str(), count);
      QVERIFY2(count > 0, qPrintable(QString("no spec covers: %1").arg(QString::fromStdString(feature))));
    }
    // Over many more draws, too, fewer than half are refused (about a quarter are: valid
    // kernels wider than what the poolings left; a slip in the generator shows here before
    // it shows as a thin matrix), and every one of them parses back canonically.
    const RandomSpecs many = random_specs(400, kRandomSpecSeed + 1);
    qInfo("400 more specs: %d draws refused", many.refused);
    QCOMPARE(int(many.texts.size()), 400);
    QVERIFY2(many.refused < 400, qPrintable(QString("%1 of %2 draws refused").arg(many.refused).arg(400 + many.refused)));
    for (const std::string& text : many.texts)
      QCOMPARE(QString::fromStdString(model_text(model_from_text(text))), QString::fromStdString(text));
  }

  // Rows: every generated spec on the best SIMD target this CPU runs, and kSpecsPerOtherTarget
  // of them (a different slice each) on every other compiled target (skipped where the CPU
  // cannot run it). The forced target moves the own Highway kernels (for these models: Adam);
  // oneDNN's primitives run whatever oneDNN picks. Batches 1, 7 and 33 (oneDNN blocks some
  // kernels by batch); run_selftest's rows per spec (loss, hits, every gradient tensor and
  // two Adam steps per batch, the empty batch, evaluation) with its tolerances. A failing
  // row's name holds the spec's text: run_selftest with model_from_text(text), these batches
  // and the target forced replays it.
  void random_specs_match_reference_data() {
    QTest::addColumn<QString>("spec");
    QTest::addColumn<QString>("target");
    const RandomSpecs& specs = matrix_specs();
    const auto targets = onednn::simd_targets();
    std::size_t best = 0;
    while (best + 1 < targets.size() && !targets[best].supported) ++best;
    for (std::size_t t = 0; t < targets.size(); ++t)
      for (std::size_t k = 0; k < specs.texts.size(); ++k) {
        // Other targets: every stride-th spec from t on (kSpecsPerOtherTarget of them).
        const std::size_t stride = specs.texts.size() / kSpecsPerOtherTarget;
        if (t != best && k % stride != t % stride) continue;
        QTest::addRow("%02zu@%s %s", k, targets[t].name.c_str(), specs.texts[k].c_str())
            << QString::fromStdString(specs.texts[k]) << QString::fromStdString(targets[t].name);
      }
  }
  void random_specs_match_reference() {
    QFETCH(QString, spec);
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    SelftestOptions opt;
    opt.targets = {"onednn"};
    opt.batches = {1, 7, 33};
    opt.model = model_from_text(spec.toStdString());
    const auto cases = run_selftest(opt);
    int failures = 0;
    double worst = 0;
    QString worst_what;
    for (const auto& c : cases) {
      if (!c.pass) {
        qInfo().noquote() << spec << "@" << target << ":" << describe(c);
        ++failures;
      }
      if (c.tol > 0 && c.max_rel_err / c.tol >= worst) {
        worst = c.max_rel_err / c.tol;
        worst_what = QString::fromStdString(c.what);
      }
    }
    qInfo().noquote() << QString("%1 @%2: %3 rows, worst %4 of the tolerance (%5)")
                             .arg(spec, target)
                             .arg(cases.size())
                             .arg(worst, 0, 'g', 3)
                             .arg(worst_what);
    QCOMPARE(failures, 0);
    // Per batch: loss/correct/samples, every gradient tensor, 2 Adam steps; then the empty
    // batch and evaluate on val and train: nothing silently skipped.
    const std::size_t tensors = opt.model.shape().params.size();
    QCOMPARE(cases.size(), opt.batches.size() * (5 + tensors) + 7);
  }

  // The reference family on the generic per-layer plan (make_step_plan's `generic`: the
  // engine picks the own kernels for it, so only this reaches LayerPlan with these shapes)
  // against the reference interpreter: loss, hits and every gradient tensor with
  // run_selftest's tolerances (selftest.cpp: loss atol 1e-4 / rtol 1e-5, hits within one,
  // gradients atol 1e-4 x the tensor's max |ref| / rtol 1e-3). The engine-level options do
  // not reach this switch (make_onednn_engine has none), so the plan is driven directly,
  // as the engine drives it.
  // The own weight gradient of a convolution with few input channels (conv_wgrad.h) against
  // a double loop, with the gradient blocked by 8 and by 16 (AVX2's and AVX-512's layouts, so
  // both run on either), the block's padding channels included, on every SIMD target.
  void conv_wgrad_matches_a_double_loop_data() {
    QTest::addColumn<QString>("simd");
    QTest::addColumn<int>("in_c");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<bool>("same");
    QTest::addColumn<int>("out_c");
    QTest::addColumn<int>("block");
    for (const auto& t : onednn::simd_targets())
      for (int block : {8, 16})
        for (const auto& [in_c, kernel, same, out_c] :
             {std::tuple{1, 5, true, 6}, {3, 3, false, 20}, {1, 1, false, 16}, {4, 7, true, 9}, {2, 3, true, 32}})
          QTest::addRow("%s/ic%d k%d %s oc%d /%d", t.name.c_str(), in_c, kernel, same ? "same" : "valid", out_c, block)
              << QString::fromStdString(t.name) << in_c << kernel << same << out_c << block;
  }
  void conv_wgrad_matches_a_double_loop() {
    QFETCH(QString, simd);
    QFETCH(int, in_c);
    QFETCH(int, kernel);
    QFETCH(bool, same);
    QFETCH(int, out_c);
    QFETCH(int, block);
    if (!simd_target_supported(simd)) QSKIP(qPrintable("this CPU cannot run " + simd));
    ForcedSimdTarget forced(simd);
    const int n = 3, h = 11, w = 9, pad = same ? kernel / 2 : 0;
    const onednn::ConvWgradShape s{n, in_c, h, w, out_c, h + 2 * pad - kernel + 1, w + 2 * pad - kernel + 1, kernel, pad,
                                   block};
    QVERIFY(onednn::conv_wgrad_supported(s));
    SplitMix64 rng(77);
    std::vector<float> x(std::size_t(n * in_c * h * w)), dy_plain(std::size_t(n * out_c * s.out_h * s.out_w));
    for (float& v : x) v = float(rng.next_unit() - 0.5);
    for (float& v : dy_plain) v = float(rng.next_unit() - 0.5);
    // Blocked: (n, c / B, y, x, c % B), the padding channels NaN-free zeros as oneDNN keeps them.
    const int blocks = (out_c + block - 1) / block;
    std::vector<float> dy(std::size_t(n * blocks * block * s.out_h * s.out_w), 0.0f);
    for (int i = 0; i < n; ++i)
      for (int c = 0; c < out_c; ++c)
        for (int p = 0; p < s.out_h * s.out_w; ++p)
          dy[((std::size_t(i) * blocks + c / block) * s.out_h * s.out_w + p) * block + c % block] =
              dy_plain[(std::size_t(i) * out_c + c) * s.out_h * s.out_w + p];
    const int taps = in_c * kernel * kernel;
    std::vector<float> dw(std::size_t(out_c * taps), NAN), db(std::size_t(out_c), NAN);
    onednn::conv_weight_grad(s, x.data(), dy.data(), nullptr, dw.data(), db.data());
    // The ReLU mask read on the fly gives the bits of masking dy first (outputs <= 0, exact
    // zeros among them, drop their gradient).
    std::vector<float> relu_out(dy.size()), masked(dy.size());
    for (std::size_t e = 0; e < dy.size(); ++e) {
      relu_out[e] = e % 5 == 0 ? 0.0f : float(rng.next_unit() - 0.5);
      masked[e] = relu_out[e] > 0.0f ? dy[e] : 0.0f;
    }
    std::vector<float> dw_fold(dw.size()), db_fold(db.size()), dw_first(dw.size()), db_first(db.size());
    onednn::conv_weight_grad(s, x.data(), dy.data(), relu_out.data(), dw_fold.data(), db_fold.data());
    onednn::conv_weight_grad(s, x.data(), masked.data(), nullptr, dw_first.data(), db_first.data());
    QVERIFY(std::memcmp(dw_fold.data(), dw_first.data(), dw.size() * sizeof(float)) == 0);
    QVERIFY(std::memcmp(db_fold.data(), db_first.data(), db.size() * sizeof(float)) == 0);
    double worst = 0;
    for (int oc = 0; oc < out_c; ++oc) {
      double bias = 0, bias_abs = 0;
      for (int i = 0; i < n; ++i)
        for (int p = 0; p < s.out_h * s.out_w; ++p) {
          const double g = dy_plain[(std::size_t(i) * out_c + oc) * s.out_h * s.out_w + p];
          bias += g, bias_abs += std::fabs(g);
        }
      worst = std::max(worst, std::fabs(db[std::size_t(oc)] - bias) / bias_abs);
      for (int ic = 0; ic < in_c; ++ic)
        for (int ky = 0; ky < kernel; ++ky)
          for (int kx = 0; kx < kernel; ++kx) {
            double sum = 0, sum_abs = 0;
            for (int i = 0; i < n; ++i)
              for (int y = 0; y < s.out_h; ++y)
                for (int xx = 0; xx < s.out_w; ++xx) {
                  const int r = y + ky - pad, c = xx + kx - pad;
                  if (r < 0 || r >= h || c < 0 || c >= w) continue;
                  const double t = double(dy_plain[((std::size_t(i) * out_c + oc) * s.out_h + y) * s.out_w + xx]) *
                                   x[((std::size_t(i) * in_c + ic) * h + r) * w + c];
                  sum += t, sum_abs += std::fabs(t);
                }
            const float got = dw[std::size_t(oc) * taps + (ic * kernel + ky) * kernel + kx];
            worst = std::max(worst, std::fabs(got - sum) / std::max(sum_abs, 1e-30));
          }
    }
    qInfo("worst |error| / sum of |terms|: %.3g", worst);
    // Float sums of a few hundred terms: each partial sum rounds by 2^-24 relative to the sum of
    // the magnitudes so far, so a few hundred ulps of that is the bound; 1e-5 is ~170 ulps.
    QVERIFY2(worst <= 1e-5, qPrintable(QString::number(worst)));
  }

  // The own max-pooling kernel is a specialisation chosen by shape in any model: a valid 2x2
  // pooling of a square image in a layout it reads (plain, blocked by 8 or 16); otherwise
  // oneDNN's. Either way the same numbers as the reference (a linear conv before it: negative
  // maxima, so its backward must not mask by the output's sign).
  void own_max_pool_is_chosen_by_shape_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("own");
    QTest::newRow("after a conv, square") << "12x12x3:conv8-pool-dense5" << true;
    QTest::newRow("after a linear conv") << "12x12x3:conv8_linear-pool-conv4-dense5" << true;
    QTest::newRow("odd square side") << "13x13x1:conv6@3s-pool-dense4" << true;
    QTest::newRow("on the input") << "12x12x3:pool-conv8-dense5" << true;
    QTest::newRow("after dropout (plain)") << "12x12x3:conv8-drop25-pool-dense5" << true;
    QTest::newRow("not square") << "12x10x3:conv8-pool-dense5" << false;
    QTest::newRow("same padding") << "12x12x3:conv8-pool@s-dense5" << false;
  }
  void own_max_pool_is_chosen_by_shape() {
    QFETCH(QString, model);
    QFETCH(bool, own);
    const ModelSpec spec = model_from_text(model.toStdString());
    std::vector<float> params(spec.param_count()), grads(spec.param_count());
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const std::string plan = onednn::make_step_plan(engine, 7, spec, params.data(), grads.data())->describe();
    qInfo("%s", plan.c_str());
    QCOMPARE(plan.find("own max-pool") != std::string::npos, own);
    SelftestOptions opt;
    opt.targets = {"onednn"};
    opt.batches = {1, 7};
    opt.model = spec;
    int failures = 0;
    for (const auto& c : run_selftest(opt))
      if (!c.pass) {
        qInfo().noquote() << describe(c);
        ++failures;
      }
    QCOMPARE(failures, 0);
  }

  void generic_layer_plan_matches_reference_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("batch");
    for (const char* model : {"reference", "dense:37"})
      for (int batch : {1, 7}) QTest::addRow("%s/batch=%d", model, batch) << QString(model) << batch;
  }
  void generic_layer_plan_matches_reference() {
    QFETCH(QString, model);
    QFETCH(int, batch);
    const ModelSpec spec = model_from_text(model.toStdString());
    QVERIFY(reference_family_width(spec).has_value());
    const std::size_t P = spec.param_count();
    // Glorot weights and random biases (init_params gives zero ones), as run_selftest's.
    std::vector<float> params(P), grads(P, NAN), ref_grads(P, NAN);
    init_params(spec, params, 3);
    SplitMix64 rng(31);
    for (const auto& t : spec.shape().params)
      if (t.fan_in == 0)
        for (std::size_t i = 0; i < t.size; ++i) params[t.offset + i] = static_cast<float>(0.1 * (rng.next_unit() - 0.5));
    // Images with an exact-zero left part (ReLU zeros and pooling ties, as in real data).
    const std::size_t pixels = std::size_t(spec.input().size());
    std::vector<float> images(std::size_t(batch) * pixels);
    for (std::size_t i = 0; i < images.size(); ++i)
      images[i] = (i % std::size_t(spec.input().w)) < 10 ? 0.0f : static_cast<float>(rng.next_unit());
    std::vector<uint8_t> labels(static_cast<std::size_t>(batch));
    for (auto& l : labels) l = static_cast<uint8_t>(rng.below(uint64_t(spec.classes())));
    const float scale = 1.0f / float(batch);

    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const auto own = onednn::make_step_plan(engine, batch, spec, params.data(), grads.data());
    QVERIFY2(dynamic_cast<onednn::LayerPlan*>(own.get()) == nullptr, "the reference family should get the own kernels");
    const auto plan = onednn::make_step_plan(engine, batch, spec, params.data(), grads.data(), Conv2Kernel::Own, true);
    QVERIFY(dynamic_cast<onednn::LayerPlan*>(plan.get()) != nullptr);
    qInfo("%s", plan->describe().c_str());
    std::copy(images.begin(), images.end(), plan->input());
    plan->sync_weights(stream, 1);
    plan->forward(stream, true, {});
    const BatchStats got = ref::softmax_xent_forward(plan->logits(), labels.data(), batch, spec.classes());
    ref::softmax_xent_backward(plan->logits(), labels.data(), batch, spec.classes(), scale, plan->logits_grad());
    plan->backward(stream);

    ReferenceWorkspace ws(spec);
    const BatchStats want =
        reference_forward_backward(params.data(), images.data(), labels.data(), batch, scale, ref_grads.data(), ws);
    QVERIFY2(within(got.loss_sum, want.loss_sum, {1e-4, 1e-5}),
             qPrintable(QString("loss %1 vs reference %2").arg(got.loss_sum, 0, 'g', 9).arg(want.loss_sum, 0, 'g', 9)));
    QVERIFY(std::abs(got.correct - want.correct) <= 1);
    for (const auto& t : spec.shape().params) {
      const std::span<const float> x(grads.data() + t.offset, t.size), r(ref_grads.data() + t.offset, t.size);
      double scale_max = 0;
      for (float v : r) scale_max = std::max(scale_max, double(std::fabs(v)));
      const WorstElement w = worst_element(x, r, {1e-4 * scale_max + 1e-30, 1e-3});
      qInfo("grad %-12s max |ref| %.3g: max abs err %.3g, worst %.3g of the tolerance (at [%zu]: %.9g vs %.9g)",
            t.name.c_str(), scale_max, w.max_abs_err, w.ratio, w.index, w.x, w.ref);
      QVERIFY2(scale_max > 0 && w.ratio <= 1.0, t.name.c_str());
    }
  }

  // The dropout key reaches both engines alike: with the same non-default key (seed, epoch)
  // the CPU engine's masks are the reference's (gradients agree within run_selftest's
  // tolerance); another epoch draws other masks (the gradients move), so the check is not
  // vacuous.
  void dropout_key_reaches_both_engines() {
    const ModelSpec spec = model_from_text("9x7x3:conv4@3s-drop50-pool@s-conv3-flatten-drop25-dense9-drop12.5-dense5");
    SplitMix64 rng(41);
    Dataset data;
    data.name = "dropout-key";
    data.count = 32;
    data.rows = 9;
    data.cols = 7;
    data.channels = 3;
    data.classes = 5;
    data.pixels.resize(std::size_t(data.count) * std::size_t(data.pixels_per_image()));
    for (auto& p : data.pixels) p = static_cast<uint8_t>(rng.below(256));
    data.labels.resize(std::size_t(data.count));
    for (auto& l : data.labels) l = static_cast<uint8_t>(rng.below(5));
    std::vector<float> params(spec.param_count());
    init_params(spec, params, 8);
    auto eng = make_onednn_engine(8, 1, spec);
    auto ref = make_engine({DeviceKind::Cpu, 0}, Backend::Reference, 8, Precision::Fp32, spec);
    const std::vector<int32_t> idx{3, 17, 5, 30, 11, 0, 22};
    auto grads = [&](ReplicaEngine& e, const DropoutKey& key) {
      e.bind_data(data, data);
      e.set_params(params);
      e.set_dropout_key(key);
      e.forward_backward(idx, 1.0f / 7);
      std::vector<float> g(spec.param_count());
      e.get_grads(g);
      return g;
    };
    const DropoutKey key{0xD20Full, 3};
    const auto ge = grads(*eng, key), gr = grads(*ref, key), gr_other = grads(*ref, DropoutKey{0xD20Full, 4});
    double all_max = 0, all_moved = 0;
    for (const auto& t : spec.shape().params) {
      const std::span<const float> x(ge.data() + t.offset, t.size), r(gr.data() + t.offset, t.size);
      double scale_max = 0, moved = 0;
      for (std::size_t i = t.offset; i < t.offset + t.size; ++i) {
        scale_max = std::max(scale_max, double(std::fabs(gr[i])));
        moved = std::max(moved, double(std::fabs(gr_other[i] - gr[i])));
      }
      const WorstElement w = worst_element(x, r, {1e-4 * scale_max + 1e-30, 1e-3});
      qInfo("grad %-12s same key: worst %.3g of the tolerance; another epoch moves it by up to %.3g (max |grad| %.3g)",
            t.name.c_str(), w.ratio, moved, scale_max);
      QVERIFY(scale_max > 0);
      QVERIFY2(w.ratio <= 1.0,
               qPrintable(QString("%1 at [%2]: %3 vs reference %4").arg(t.name.c_str()).arg(w.index).arg(w.x).arg(w.ref)));
      all_max = std::max(all_max, scale_max);
      all_moved = std::max(all_moved, moved);
    }
    // Other masks move the gradient by a good part of its size (the last layer's bias, which
    // only sees the logits, moves least).
    QVERIFY(all_moved > 0.1 * all_max);
  }

  void conv2_choice_follows_the_option() {
    // The default is the measured winner on AVX2 and AVX-512 alike (docs/benchmarks.md).
    QVERIFY(TrainConfig{}.engine.cpu_conv2 == Conv2Kernel::Own);
    QVERIFY(cpu_kernels_summary().find("conv2 own winograd") != std::string::npos);
    QVERIFY(cpu_kernels_summary(Conv2Kernel::Onednn).find("conv2 onednn") != std::string::npos);
    TrainConfig c;
    QVERIFY(test::expect_error<ConfigError>([&] { set_option(train_option("cpu_conv2"), c, "fast"); }, "--cpu-conv2"));
  }

  void selftest_targets_cover_every_device() {
    const auto targets = selftest_targets();
    QVERIFY(!targets.empty());
    QCOMPARE(QString::fromStdString(targets.front()), QString("onednn"));
    QCOMPARE(targets.size(), query_devices().gpus.size() + 1);
  }

  void selftest_rejects_unknown_target() {
    SelftestOptions opt;
    opt.targets = {"tpu"};
    QVERIFY_THROWS_EXCEPTION(ConfigError, run_selftest(opt));
    opt.targets = {"onednn"};
    opt.batches = {0};
    QVERIFY_THROWS_EXCEPTION(ConfigError, run_selftest(opt));
  }

  // The harness itself: the reference against itself passes every check with zero error
  // (a tolerance bug or a nondeterministic reference would show here).
  void selftest_reference_against_itself() {
    SelftestOptions opt;
    opt.targets = {"reference"};
    opt.batches = {3};
    for (const auto& c : run_selftest(opt)) {
      QVERIFY2(c.pass, qPrintable(describe(c)));
      QVERIFY2(c.max_abs_err == 0.0, qPrintable(describe(c)));
    }
  }

  // ---- the oneDNN engine itself ----
  // Two replicas on two threads at once (the trainer's arrangement) compute exactly what one
  // engine computes alone: no shared state, no thread-count dependence in the kernels; also
  // with two intra-replica threads each (then 4 OpenMP threads share the machine).
  void onednn_concurrent_replicas_are_deterministic_data() {
    QTest::addColumn<int>("threads");
    QTest::newRow("1 thread per replica") << 1;
    QTest::newRow("2 threads per replica") << 2;
  }
  void onednn_concurrent_replicas_are_deterministic() {
    QFETCH(int, threads);
    const Dataset data = test::make_synthetic_dataset(256, 3);
    const auto params = random_params(5);
    std::vector<int32_t> idx_a(64), idx_b(37);
    for (int i = 0; i < 64; ++i) idx_a[i] = i * 3;
    for (int i = 0; i < 37; ++i) idx_b[i] = 255 - i * 5;

    auto run = [&](std::span<const int32_t> idx, std::vector<float>& grads, BatchStats& stats) {
      auto e = make_onednn_engine(64, threads);
      e->bind_data(data, data);
      e->set_params(params);
      for (int rep = 0; rep < 3; ++rep) stats = e->forward_backward(idx, 0.5f);
      grads.resize(cnn::kReferenceParams);
      e->get_grads(grads);
    };
    std::vector<float> ga_alone, gb_alone, ga, gb;
    BatchStats sa_alone, sb_alone, sa, sb;
    run(idx_a, ga_alone, sa_alone);
    run(idx_b, gb_alone, sb_alone);
    std::thread ta([&] { run(idx_a, ga, sa); });
    std::thread tb([&] { run(idx_b, gb, sb); });
    ta.join();
    tb.join();
    QVERIFY(ga == ga_alone);
    QVERIFY(gb == gb_alone);
    QCOMPARE(sa.loss_sum, sa_alone.loss_sum);
    QCOMPARE(sb.correct, sb_alone.correct);
  }

  // ---- the hand-written kernels on every SIMD target they were compiled for ----
  // Adam is the reference loop's arithmetic exactly (no FMA contraction) on every target, so
  // a oneDNN replica and a reference replica fed equal gradients stay bit-identical, whatever
  // the instruction set of the machine each runs on.
  void onednn_adam_is_bit_identical_to_reference_data() { add_simd_target_rows(); }
  void onednn_adam_is_bit_identical_to_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    const Dataset data = test::make_synthetic_dataset(64, 9);
    auto e = make_onednn_engine(64);
    e->bind_data(data, data);
    std::vector<float> host = random_params(11), m(cnn::kReferenceParams, 0.0f), v(cnn::kReferenceParams, 0.0f);
    e->set_params(host);
    std::vector<int32_t> idx(64);
    for (int i = 0; i < 64; ++i) idx[i] = i;
    AdamConfig cfg;
    cfg.lr = 3e-3f;
    std::vector<float> g(cnn::kReferenceParams), got(cnn::kReferenceParams);
    for (int step = 1; step <= 3; ++step) {
      e->forward_backward(idx, 1.0f / 64);
      e->get_grads(g);
      e->apply_adam(cfg, step);
      adam_update_reference(cfg, step, host, g, m, v);
      e->get_params(got);
      QVERIFY2(got == host, qPrintable(QString("step %1").arg(step)));
    }
  }

  // The kernel alone over gradients spanning many octaves, exact zeros and both signs, on a
  // length with a tail after the last whole vector of every width: weights and both moments
  // bit for bit (memcmp: even the sign of a zero).
  void adam_kernel_is_bit_identical_to_reference_data() { add_simd_target_rows(); }
  void adam_kernel_is_bit_identical_to_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    constexpr std::size_t count = 4099;
    SplitMix64 rng(17);
    std::vector<float> w(count), g(count), m(count, 0.0f), v(count, 0.0f);
    for (auto& x : w) x = static_cast<float>(rng.next_unit() - 0.5);
    std::vector<float> w_ref = w, m_ref = m, v_ref = v;
    AdamConfig cfg;
    cfg.lr = 3e-3f;
    for (int step = 1; step <= 6; ++step) {
      for (auto& x : g) {
        const int octave = int(rng.below(40)) - 30;   // 1e-9 .. 1e3
        x = rng.below(10) == 0 ? 0.0f : static_cast<float>(std::ldexp(rng.next_unit() - 0.5, octave));
      }
      onednn::adam_update(cfg, step, w, g, m, v);
      adam_update_reference(cfg, step, w_ref, g, m_ref, v_ref);
      const QString at = QString("%1, step %2").arg(target).arg(step);
      QVERIFY2(std::memcmp(w.data(), w_ref.data(), count * sizeof(float)) == 0, qPrintable("weights, " + at));
      QVERIFY2(std::memcmp(m.data(), m_ref.data(), count * sizeof(float)) == 0, qPrintable("m, " + at));
      QVERIFY2(std::memcmp(v.data(), v_ref.data(), count * sizeof(float)) == 0, qPrintable("v, " + at));
    }
  }

  // Pixels into the input: every byte value, on lengths with a tail after the last whole vector
  // of every width, bit for bit against the reference's x/255 (a reciprocal would differ).
  void pixel_scale_is_bit_identical_to_reference_data() { add_simd_target_rows(); }
  void pixel_scale_is_bit_identical_to_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    for (const std::size_t count : {std::size_t(0), std::size_t(7), std::size_t(256), std::size_t(784 + 13)}) {
      std::vector<uint8_t> src(count);
      for (std::size_t i = 0; i < count; ++i) src[i] = static_cast<uint8_t>((i * 97 + 31) % 256);
      if (count == 256) std::iota(src.begin(), src.end(), uint8_t(0));
      std::vector<float> got(count, -1.0f), want(count);
      onednn::scale_pixels(src.data(), got.data(), count);
      for (std::size_t i = 0; i < count; ++i) want[i] = static_cast<float>(src[i]) / 255.0f;
      // (No memcmp of an empty vector's null data: UBSan's nonnull check, CI's sanitizer stage.)
      QVERIFY2(count == 0 || std::memcmp(got.data(), want.data(), count * sizeof(float)) == 0,
               qPrintable(QString("%1, %2 pixels").arg(target).arg(count)));
    }
  }

  // Fused conv1+ReLU+pool forward and its weight gradient, in every channel block, against the
  // reference layers (conv2d, ReLU, max-pool and back). The reference sums in double, the
  // kernel in float (with FMA where the target has one), so values agree to float noise; the
  // window argmax agrees exactly wherever it matters (a positive maximum).
  void conv1_kernel_matches_reference_data() { add_simd_target_rows(); }
  void conv1_kernel_matches_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    QCOMPARE(QString::fromStdString(onednn::simd_target()), target);
    constexpr int n = 3, C = cnn::kConv1Out, S = cnn::kPool1Side, O = cnn::kConv1Side;
    const Conv1Case k = make_conv1_case(n);

    std::vector<float> y(std::size_t(n) * C * O * O), pooled_ref(std::size_t(n) * C * S * S);
    const ref::ConvShape cs{n, 1, cnn::kImageSide, cnn::kImageSide, C, 3};
    const ref::PoolShape ps{n, C, O, O};
    ref::conv2d_forward(cs, k.images.data(), k.weights.data(), k.bias.data(), y.data());
    ref::relu_forward(y.data(), y.data(), y.size());
    ref::maxpool2x2_forward(ps, y.data(), pooled_ref.data());
    std::vector<float> dy(y.size()), dw_ref(k.weights.size()), db_ref(C);
    ref::maxpool2x2_backward(ps, y.data(), k.d_pooled.data(), dy.data());
    ref::relu_backward(y.data(), dy.data(), dy.data(), dy.size());
    ref::conv2d_backward(cs, k.images.data(), k.weights.data(), dy.data(), nullptr, dw_ref.data(), db_ref.data());
    int positive = 0;
    for (float x : pooled_ref) positive += x > 0.0f;
    QVERIFY(positive > int(pooled_ref.size()) / 5 && positive < int(pooled_ref.size()));   // ReLU both ways
    double dw_max = 0, db_max = 0;
    for (float x : dw_ref) dw_max = std::max(dw_max, double(std::fabs(x)));
    for (float x : db_ref) db_max = std::max(db_max, double(std::fabs(x)));

    for (int block : {16, 8, 1}) {
      const QString label = QString("%1, block %2").arg(target).arg(block);
      std::vector<float> p(pooled_ref.size()), dp(p.size());
      std::vector<uint8_t> a(p.size());
      std::vector<double> dt(k.taps.size()), db(C);
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < S * S; ++i)
            dp[blocked_at(s, c, i / S, i % S, C, S, block)] = k.d_pooled[blocked_at(s, c, i / S, i % S, C, S, 1)];
      onednn::conv1_relu_pool_forward(n, k.images.data(), k.taps.data(), k.bias.data(), block, p.data(), a.data());
      onednn::conv1_relu_pool_backward(n, k.images.data(), p.data(), dp.data(), a.data(), block, dt.data(), db.data());
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < S * S; ++i) {
            const std::size_t x = blocked_at(s, c, i / S, i % S, C, S, block), r = blocked_at(s, c, i / S, i % S, C, S, 1);
            QVERIFY2(within(p[x], pooled_ref[r], {1e-6, 1e-5}),
                     qPrintable(QString("%1: pooled %2 vs reference %3").arg(label).arg(p[x]).arg(pooled_ref[r])));
            if (pooled_ref[r] > 0.0f) QCOMPARE(int(a[x]), window_argmax(y, s, c, i / S, i % S));
          }
      std::vector<float> dw(dw_ref.size());
      onednn::conv1_taps_to_weights(dt.data(), dw.data());
      // Per-sample float sums of <= 169 terms: ~1e-6 of the largest gradient measured.
      for (std::size_t i = 0; i < dw.size(); ++i)
        QVERIFY2(within(dw[i], dw_ref[i], {1e-5 * dw_max, 1e-4}),
                 qPrintable(QString("%1: d_weight[%2] %3 vs reference %4").arg(label).arg(i).arg(dw[i]).arg(dw_ref[i])));
      for (int c = 0; c < C; ++c)
        QVERIFY2(within(db[c], db_ref[c], {1e-5 * db_max, 1e-4}),
                 qPrintable(QString("%1: d_bias[%2] %3 vs reference %4").arg(label).arg(c).arg(db[c]).arg(db_ref[c])));
    }
  }

  // Pool2 + ReLU mask over every supported pair of layouts against the reference max-pool:
  // selection only, no arithmetic, so bit for bit, including the floor's dropped row/column.
  void pool2_kernel_matches_reference_data() { add_simd_target_rows(); }
  void pool2_kernel_matches_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    constexpr int n = 2, C = cnn::kConv2Out, IN = cnn::kConv2Side, OUT = cnn::kPool2Side;
    const std::vector<float> in_plain = grid_values(std::size_t(n) * C * IN * IN, 7);
    const std::vector<float> d_out_plain = grid_values(std::size_t(n) * C * OUT * OUT, 8);
    // The reference: pooled values, then the gradient masked by the ReLU (pooled > 0) and
    // routed to the first maximum.
    const ref::PoolShape ps{n, C, IN, IN};
    std::vector<float> ref_out(d_out_plain.size()), masked(d_out_plain.size()), ref_din(in_plain.size());
    ref::maxpool2x2_forward(ps, in_plain.data(), ref_out.data());
    for (std::size_t i = 0; i < masked.size(); ++i) masked[i] = ref_out[i] > 0.0f ? d_out_plain[i] : 0.0f;
    ref::maxpool2x2_backward(ps, in_plain.data(), masked.data(), ref_din.data());

    for (auto [in_block, out_block] : {std::pair{16, 1}, {16, 16}, {8, 8}, {8, 1}, {1, 1}}) {
      const QString label = QString("%1, in block %2, out block %3").arg(target).arg(in_block).arg(out_block);
      const onednn::PoolShape shape{n, C, IN, OUT, in_block, out_block};
      std::vector<float> in(in_plain.size()), d_out(d_out_plain.size()), out(d_out.size()), d_in(in.size(), 7.0f);
      std::vector<uint8_t> arg(out.size());
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c) {
          for (int i = 0; i < IN * IN; ++i)
            in[blocked_at(s, c, i / IN, i % IN, C, IN, in_block)] = in_plain[blocked_at(s, c, i / IN, i % IN, C, IN, 1)];
          for (int i = 0; i < OUT * OUT; ++i)
            d_out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, out_block)] =
                d_out_plain[blocked_at(s, c, i / OUT, i % OUT, C, OUT, 1)];
        }
      onednn::max_pool_forward(shape, in.data(), out.data(), arg.data());
      onednn::max_pool_backward_relu(shape, d_out.data(), out.data(), arg.data(), d_in.data());
      int wrong_out = 0, wrong_din = 0;
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c) {
          for (int i = 0; i < OUT * OUT; ++i)
            wrong_out += out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, out_block)] !=
                         ref_out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, 1)];
          for (int i = 0; i < IN * IN; ++i)   // every element written, including the dropped row/column
            wrong_din += d_in[blocked_at(s, c, i / IN, i % IN, C, IN, in_block)] !=
                         ref_din[blocked_at(s, c, i / IN, i % IN, C, IN, 1)];
        }
      QVERIFY2(wrong_out == 0, qPrintable(QString("%1: %2 pooled values differ").arg(label).arg(wrong_out)));
      QVERIFY2(wrong_din == 0, qPrintable(QString("%1: %2 gradient values differ").arg(label).arg(wrong_din)));
    }
  }

  // Own Winograd conv2, F(4x4, 3x3): forward (+ bias + ReLU), data gradient and weight
  // gradient against the reference conv2d. The transforms' constants (4, 5, 8, 1/6, 1/24)
  // cost a few bits against direct summation, as in oneDNN's Winograd: each result is held to
  // 1e-4 of its tensor's largest magnitude plus 1e-3 of itself (the selftest's gradient rule);
  // a wrong tap, tile edge or channel would be off by O(1) of that scale. n = 5: a partial
  // chunk at the end.
  void winograd_conv2_matches_reference_data() { add_simd_target_rows(); }
  void winograd_conv2_matches_reference() {
    QFETCH(QString, target);
    if (!simd_target_supported(target)) QSKIP(qPrintable("this CPU cannot run " + target));
    const ForcedSimdTarget forced(target);
    constexpr int n = 5, CI = cnn::kConv1Out, CO = cnn::kConv2Out, IS = cnn::kPool1Side, OS = cnn::kConv2Side;
    SplitMix64 rng(31);
    std::vector<float> x(std::size_t(n) * CI * IS * IS), w(std::size_t(CO) * CI * 9), bias(CO),
        dy(std::size_t(n) * CO * OS * OS);
    for (auto& v : x) v = std::max(0.0f, static_cast<float>(rng.next_unit() - 0.3));   // post-ReLU: zeros
    for (auto& v : w) v = static_cast<float>(0.16 * (rng.next_unit() - 0.5));
    for (auto& v : bias) v = static_cast<float>(0.1 * (rng.next_unit() - 0.5));
    for (auto& v : dy) v = static_cast<float>(rng.next_unit() - 0.5);
    const ref::ConvShape cs{n, CI, IS, IS, CO, 3};
    std::vector<float> y_ref(dy.size()), dx_ref(x.size()), dw_ref(w.size()), db_ref(CO);
    ref::conv2d_forward(cs, x.data(), w.data(), bias.data(), y_ref.data());
    ref::relu_forward(y_ref.data(), y_ref.data(), y_ref.size());
    ref::conv2d_backward(cs, x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());

    auto blocked = [&](const std::vector<float>& plain, int channels, int side) {
      std::vector<float> out(plain.size());
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < channels; ++c)
          for (int i = 0; i < side * side; ++i)
            out[blocked_at(s, c, i / side, i % side, channels, side, 16)] =
                plain[blocked_at(s, c, i / side, i % side, channels, side, 1)];
      return out;
    };
    auto plain = [&](const std::vector<float>& b, int channels, int side) {
      std::vector<float> out(b.size());
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < channels; ++c)
          for (int i = 0; i < side * side; ++i)
            out[blocked_at(s, c, i / side, i % side, channels, side, 1)] =
                b[blocked_at(s, c, i / side, i % side, channels, side, 16)];
      return out;
    };
    onednn::WinogradConv2Weights u;
    onednn::winograd_conv2_set_weights(w.data(), u);
    const std::vector<float> xb = blocked(x, CI, IS), dyb = blocked(dy, CO, OS);
    std::vector<float> yb(dy.size(), 7.0f), dxb(x.size(), 7.0f), dw(w.size()), db(CO);
    onednn::Conv2OutputGrad from_dy;
    from_dy.dy = dyb.data();
    onednn::winograd_conv2_forward(u, n, xb.data(), bias.data(), yb.data());
    onednn::winograd_conv2_backward(u, n, xb.data(), from_dy, dxb.data(), dw.data(), db.data());
    // Each gradient alone is the same computation, bit for bit.
    std::vector<float> dx_alone(x.size(), 7.0f), dw_alone(w.size()), db_alone(CO);
    onednn::winograd_conv2_backward(u, n, xb.data(), from_dy, dx_alone.data(), nullptr, nullptr);
    onednn::winograd_conv2_backward(u, n, xb.data(), from_dy, nullptr, dw_alone.data(), db_alone.data());
    QVERIFY(dx_alone == dxb && dw_alone == dw && db_alone == db);

    // Pool2 fused in: the forward's pooled values and argmax are max_pool_forward's over y, and
    // the backward from pool2's side is the backward from the dy max_pool_backward_relu writes,
    // bit for bit (selection only).
    const onednn::PoolShape pool{n, CO, OS, cnn::kPool2Side, 16, 1};
    const std::size_t pooled_size = std::size_t(n) * cnn::kFlat;
    std::vector<float> pooled(pooled_size), pooled_ref(pooled_size), dc2(dy.size());
    std::vector<uint8_t> arg(pooled_size), arg_ref(pooled_size);
    onednn::winograd_conv2_forward(u, n, xb.data(), bias.data(), nullptr, pooled.data(), arg.data());
    onednn::max_pool_forward(pool, yb.data(), pooled_ref.data(), arg_ref.data());
    QVERIFY(pooled == pooled_ref);
    QVERIFY(arg == arg_ref);
    const std::vector<float> d_pooled = grid_values(pooled_size, 41);
    onednn::max_pool_backward_relu(pool, d_pooled.data(), pooled.data(), arg.data(), dc2.data());
    onednn::Conv2OutputGrad from_pool, from_dc2;
    from_pool.pooled = pooled.data();
    from_pool.d_pooled = d_pooled.data();
    from_pool.arg = arg.data();
    from_dc2.dy = dc2.data();
    std::vector<float> dx1(x.size()), dx2(x.size()), dw1(w.size()), dw2(w.size()), db1(CO), db2(CO);
    onednn::winograd_conv2_backward(u, n, xb.data(), from_dc2, dx1.data(), dw1.data(), db1.data());
    onednn::winograd_conv2_backward(u, n, xb.data(), from_pool, dx2.data(), dw2.data(), db2.data());
    QVERIFY(dx1 == dx2 && dw1 == dw2 && db1 == db2);

    auto check = [&](const char* what, const std::vector<float>& got, const std::vector<float>& want) {
      double scale = 0, worst = 0;
      for (float v : want) scale = std::max(scale, double(std::fabs(v)));
      std::size_t at = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs(double(got[i]) - want[i]) / (1e-4 * scale + 1e-3 * std::fabs(want[i]));
        if (!(err <= worst)) worst = err, at = i;   // NaN counts as the worst
      }
      qInfo().noquote() << QString("%1 %2: worst %3 of the tolerance (at %4: %5 vs %6)")
                               .arg(target, what).arg(worst, 0, 'g', 3).arg(at).arg(got[at]).arg(want[at]);
      QVERIFY2(worst <= 1.0, qPrintable(QString("%1 %2").arg(target, what)));
    };
    check("forward", plain(yb, CO, OS), y_ref);
    check("data gradient", plain(dxb, CI, IS), dx_ref);
    check("weight gradient", dw, dw_ref);
    check("bias gradient", db, db_ref);
  }

  // The own kernels split the batch by sample and add per-sample sums in sample order, so
  // the intra-replica thread count changes nothing, bit for bit.
  void kernels_do_not_depend_on_thread_count() {
    constexpr int n = 7, C = cnn::kConv1Out, S = cnn::kPool1Side;
    const Conv1Case k = make_conv1_case(n);
    const onednn::PoolShape pool{n, C, S, S / 2, 16, 1};
    struct Result {
      std::vector<float> pooled, pool_out, pool_din;
      std::vector<uint8_t> arg, pool_arg;
      std::vector<double> d_taps, d_bias;
    };
    auto run = [&](int threads) {
      omp_set_num_threads(threads);
      Result r;
      r.pooled.resize(k.d_pooled.size());
      r.arg.resize(r.pooled.size());
      r.d_taps.resize(k.taps.size());
      r.d_bias.resize(C);
      onednn::conv1_relu_pool_forward(n, k.images.data(), k.taps.data(), k.bias.data(), 16, r.pooled.data(),
                                      r.arg.data());
      onednn::conv1_relu_pool_backward(n, k.images.data(), r.pooled.data(), k.d_pooled.data(), r.arg.data(), 16,
                                       r.d_taps.data(), r.d_bias.data());
      r.pool_out.resize(std::size_t(n) * C * (S / 2) * (S / 2));
      r.pool_arg.resize(r.pool_out.size());
      r.pool_din.resize(r.pooled.size());
      onednn::max_pool_forward(pool, r.pooled.data(), r.pool_out.data(), r.pool_arg.data());
      onednn::max_pool_backward_relu(pool, r.pool_out.data(), r.pool_out.data(), r.pool_arg.data(), r.pool_din.data());
      omp_set_num_threads(1);
      return r;
    };
    const Result one = run(1), three = run(3);
    QVERIFY(one.pooled == three.pooled && one.arg == three.arg);
    QVERIFY(one.d_taps == three.d_taps && one.d_bias == three.d_bias);
    QVERIFY(one.pool_out == three.pool_out && one.pool_arg == three.pool_arg && one.pool_din == three.pool_din);
  }

  void simd_targets_are_listed_and_forced() {
    const auto targets = onednn::simd_targets();
    QVERIFY(!targets.empty());
    QCOMPARE(QString::fromStdString(targets.back().name), QString("scalar"));   // the fallback, compiled last
    QVERIFY(targets.front().supported || targets.size() > 1);
    int supported = 0;
    for (const auto& t : targets) supported += t.supported;
    QVERIFY(supported >= 1 && targets.back().supported);
    {
      const ForcedSimdTarget forced("scalar");
      QCOMPARE(QString::fromStdString(onednn::simd_target()), QString("scalar"));
    }
    // Back to the best this CPU has.
    for (const auto& t : targets)
      if (t.supported) {
        QCOMPARE(QString::fromStdString(onednn::simd_target()), QString::fromStdString(t.name));
        break;
      }
    {
      const ForcedSimdTarget forced("SCALAR");   // any case, like ONEDNN_MAX_CPU_ISA=AVX2
      QCOMPARE(QString::fromStdString(onednn::simd_target()), QString("scalar"));
    }
    for (const char* bad : {"avx9", "avx-2", "neon2"}) {
      try {
        onednn::force_simd_target(bad);
        QFAIL(qPrintable(QString("accepted SIMD target '%1'").arg(bad)));
      } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains(bad) && QString(e.what()).contains("scalar"), e.what());
      }
    }
    for (const auto& t : targets)
      if (!t.supported) QVERIFY_THROWS_EXCEPTION(ConfigError, onednn::force_simd_target(t.name));
    // (Listed first on every x86-64 build, but runnable only where the CPU has AVX-512.)
    if (onednn::simd_targets().front().name == "avx3" && onednn::simd_targets().front().supported) {
      const ForcedSimdTarget forced("avx512");   // the familiar name for Highway's AVX3
      QCOMPARE(QString::fromStdString(onednn::simd_target()), QString("avx3"));
    }
  }

  void onednn_arguments_and_chunking() {
    const Dataset data = test::make_synthetic_dataset(16, 3);
    QVERIFY_THROWS_EXCEPTION(ConfigError, make_onednn_engine(8, 0));   // threads per replica >= 1
    auto e = make_onednn_engine(8);
    const std::vector<int32_t> nine(9, 0), out_of_range{0, 16};
    QVERIFY_THROWS_EXCEPTION(Error, e->forward_backward(nine, 1.0f));   // before bind_data
    e->bind_data(data, data);
    e->set_params(random_params(1));
    QVERIFY_THROWS_EXCEPTION(Error, e->forward_backward(out_of_range, 1.0f));
    QVERIFY_THROWS_EXCEPTION(Error, e->set_params(std::vector<float>(10)));
    // Evaluation chunks through max_batch, so any count works.
    std::vector<int32_t> all(16);
    for (int i = 0; i < 16; ++i) all[i] = i;
    QCOMPARE(int(e->evaluate(all).samples), 16);
    // So does forward_backward beyond max_batch: chunks of 8, gradients summed.
    auto big = make_onednn_engine(16);
    big->bind_data(data, data);
    big->set_params(random_params(1));
    const BatchStats chunked = e->forward_backward(all, 0.25f), whole = big->forward_backward(all, 0.25f);
    QCOMPARE(int(chunked.samples), 16);
    QVERIFY(within(chunked.loss_sum, whole.loss_sum, {1e-5, 1e-6}));
    std::vector<float> g_chunked(cnn::kReferenceParams), g_whole(cnn::kReferenceParams);
    e->get_grads(g_chunked);
    big->get_grads(g_whole);
    double scale = 0;
    for (float g : g_whole) scale = std::max(scale, double(std::fabs(g)));
    const WorstElement worst = worst_element(g_chunked, g_whole, {1e-4 * scale, 0});   // 1e-4 of the largest
    QVERIFY2(scale > 0 && worst.ratio <= 1.0, qPrintable(QString("worst %1 of %2").arg(worst.max_abs_err).arg(scale)));
    QCOMPARE(QString::fromStdString(e->device_name()), QString("cpu (oneDNN)"));
    QCOMPARE(QString::fromStdString(onednn_version()).count('.'), 2);
    const QString kernels = QString::fromStdString(cpu_kernels_summary());
    QVERIFY2(kernels.startsWith("Highway " + QString::fromStdString(onednn::simd_target()) + ", oneDNN "), qPrintable(kernels));
  }

  // ---- the device grammar ----
  void parse_valid_devices_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("canonical");
    QTest::addColumn<int>("count");
    QTest::addColumn<bool>("cuda");
    QTest::addColumn<bool>("simulated");
    QTest::newRow("cpu") << "cpu" << "cpu:1" << 1 << false << false;
    QTest::newRow("cpu:1") << "cpu:1" << "cpu:1" << 1 << false << false;
    QTest::newRow("cpu:4") << "cpu:4" << "cpu:4" << 4 << false << false;
    QTest::newRow("spaces") << "  cpu:2 " << "cpu:2" << 2 << false << false;
    QTest::newRow("cuda") << "cuda" << "cuda:0" << 1 << true << false;
    QTest::newRow("cuda:0") << "cuda:0" << "cuda:0" << 1 << true << false;
    QTest::newRow("two gpus") << "cuda:0,cuda:1" << "cuda:0,cuda:1" << 2 << true << false;
    QTest::newRow("spaced list") << "cuda:1, cuda:0" << "cuda:1,cuda:0" << 2 << true << false;
    QTest::newRow("shared gpu") << "cuda:0,cuda:0" << "cuda:0,cuda:0" << 2 << true << true;
    QTest::newRow("mixed sharing") << "cuda:0,cuda:1,cuda:1" << "cuda:0,cuda:1,cuda:1" << 3 << true << true;
    QTest::newRow("local gpu") << "cuda:local" << "cuda:local" << 1 << true << false;
  }
  void parse_valid_devices() {
    QFETCH(QString, text);
    QFETCH(QString, canonical);
    QFETCH(int, count);
    QFETCH(bool, cuda);
    QFETCH(bool, simulated);
    const auto d = parse_devices(text.toStdString());
    QCOMPARE(int(d.size()), count);
    for (std::size_t i = 0; i < d.size(); ++i) {
      QCOMPARE(d[i].kind == DeviceKind::Cuda, cuda);
      if (!cuda) QCOMPARE(d[i].index, int(i));
    }
    QCOMPARE(QString::fromStdString(format_devices(d)), canonical);
    QVERIFY(parse_devices(format_devices(d)) == d);   // format is parse's inverse
    QCOMPARE(is_simulated(d), simulated);
  }

  void parse_invalid_devices_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("mentions");   // the error must name the offending text
    QTest::newRow("empty") << "" << "empty";
    QTest::newRow("blank") << "   " << "empty";
    QTest::newRow("unknown kind") << "tpu:0" << "tpu:0";
    QTest::newRow("upper case") << "CPU:1" << "CPU:1";
    QTest::newRow("zero cpus") << "cpu:0" << "cpu:0";
    QTest::newRow("negative cpus") << "cpu:-1" << "cpu:-1";
    QTest::newRow("non-numeric") << "cpu:x" << "cpu:x";
    QTest::newRow("missing count") << "cpu:" << "cpu:";
    QTest::newRow("plus sign") << "cpu:+2" << "cpu:+2";
    QTest::newRow("trailing junk") << "cpu:2x" << "cpu:2x";
    QTest::newRow("overflow") << "cpu:99999999999999" << "cpu:99999999999999";
    QTest::newRow("cpu twice") << "cpu:1,cpu:2" << "cpu:1,cpu:2";
    QTest::newRow("cpu then cuda") << "cpu:2,cuda:0" << "mixes";
    QTest::newRow("cuda then cpu") << "cuda:0,cpu" << "mixes";
    QTest::newRow("negative gpu") << "cuda:-1" << "cuda:-1";
    QTest::newRow("bad gpu") << "cuda:a" << "cuda:a";
    QTest::newRow("empty entry") << "cuda:0,,cuda:1" << "empty entry";
    QTest::newRow("trailing comma") << "cuda:0," << "empty entry";
    QTest::newRow("local and more") << "cuda:local,cuda:1" << "stands alone";
    QTest::newRow("more and local") << "cuda:0,cuda:local" << "stands alone";
    QTest::newRow("local twice") << "cuda:local,cuda:local" << "stands alone";
    QTest::newRow("local typo") << "cuda:locale" << "cuda:locale";
  }

  void local_gpu_resolves_to_the_local_rank() {
    const auto d = resolve_local_gpus(parse_devices("cuda:local"), 3);
    QCOMPARE(d.size(), std::size_t(1));
    QCOMPARE(d[0].index, 3);
    QCOMPARE(QString::fromStdString(format_devices(d)), QString("cuda:3"));
    QVERIFY(resolve_local_gpus(parse_devices("cuda:1"), 3)[0].index == 1);   // explicit ordinals stay
  }
  void parse_invalid_devices() {
    QFETCH(QString, text);
    QFETCH(QString, mentions);
    QVERIFY(test::expect_error<ConfigError>([&] { parse_devices(text.toStdString()); }, mentions));
  }

  // The registry: every backend has a row, auto picks the preferred one of the device kind,
  // a backend of another kind is refused naming the choices.
  void backend_names_resolve() {
    QCOMPARE(resolve_backend(DeviceKind::Cpu, std::nullopt), Backend::OneDnn);
    QCOMPARE(resolve_backend(DeviceKind::Cpu, Backend::Reference), Backend::Reference);
    QCOMPARE(resolve_backend(DeviceKind::Cuda, std::nullopt), Backend::Cuda);
    QVERIFY(test::expect_error<ConfigError>([] { resolve_backend(DeviceKind::Cpu, Backend::Cuda); },
                                            "use auto, onednn or reference"));
    QVERIFY(test::expect_error<ConfigError>([] { resolve_backend(DeviceKind::Cuda, Backend::OneDnn); }, "use auto or cuda"));
    for (Backend b : kAllBackends) {
      QCOMPARE(parse_backend(to_string(b)), std::optional<Backend>(b));
      const BackendInfo& row = backend_info(b);
      QCOMPARE(row.backend, b);
      QVERIFY(row.supports(Precision::Fp32));
      QVERIFY(row.make_engine != nullptr && row.versions != nullptr);
    }
    QCOMPARE(parse_backend("auto"), std::optional<Backend>());   // a choice, not a backend
    QVERIFY(!backend_info(Backend::OneDnn).supports(Precision::Tf32));
    QVERIFY(backend_info(Backend::OneDnn).straggler && !backend_info(Backend::Cuda).straggler);
    auto e = make_engine({DeviceKind::Cpu, 0}, Backend::Reference, 4);
    QCOMPARE(QString::fromStdString(e->device_name()), QString("cpu (reference)"));
  }

  void cpu_devices_validate_and_communicate() {
    const DeviceInventory inv = query_devices();
    QVERIFY(inv.cpu_cores >= 1);
    auto comms = make_communicators(parse_devices("cpu:2"), nullptr);
    QCOMPARE(comms.size(), std::size_t(2));
    QCOMPARE(comms[1]->rank(), 1);
    QCOMPARE(comms[0]->size(), 2);
    QVERIFY(comms[0]->memory_space() == MemorySpace::Host);
    QVERIFY(QString::fromStdString(components_summary()).startsWith("oneDNN " + QString::fromStdString(onednn_version())));
  }

  void cuda_devices_without_cuda() {
#ifdef MB_HAVE_CUDA
    QSKIP("this build has CUDA support");
#else
    const DeviceInventory inv = query_devices();
    QVERIFY(inv.gpus.empty());
    QCOMPARE(QString::fromStdString(inv.gpu_note), QString("built without CUDA support"));
    const auto cuda = parse_devices("cuda:0");   // the syntax is fine; the build lacks the backend
    QVERIFY(!backend_info(Backend::Cuda).built());
    QVERIFY(test::expect_error<ConfigError>([&] { make_engine(cuda.front(), Backend::Cuda, 8); }, "without CUDA"));
    QVERIFY(test::expect_error<ConfigError>([&] { make_communicators(cuda, nullptr); }, "without CUDA"));
    QVERIFY(QString::fromStdString(components_summary()).contains("CUDA: not built"));
#endif
  }


};

QTEST_GUILESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"

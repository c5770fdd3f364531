// The reference layers' backward passes against central finite differences of their forward
// passes (one data-driven row per layer and one for the whole model; whole-model rows for models
// outside the reference family: same padding, poolings on odd sides, gap, _linear/_nobias,
// dense on images, dropout with fixed masks), plus exact checks of the
// forward layouts, the tie rules, the empty batch and the uniform-logit loss.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <vector>

#include "backends/reference/layers.h"
#include "backends/reference/reference_net.h"
#include "model/cnn_spec.h"
#include "model/init_params.h"
#include "model/model_text.h"
#include "util/error.h"
#include "util/random.h"
#include "util/tolerance.h"

using namespace mb;

namespace {

std::vector<float> random_floats(std::size_t n, SplitMix64& rng, double lo, double hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(lo + (hi - lo) * rng.next_unit());
  return v;
}

std::vector<uint8_t> random_labels(std::size_t n, SplitMix64& rng) {
  std::vector<uint8_t> v(n);
  for (auto& l : v) l = static_cast<uint8_t>(rng.below(cnn::kClasses));
  return v;
}

// sum(y * r) in double: the scalar objective whose gradient w.r.t. y is r.
double project(const std::vector<float>& y, const std::vector<float>& r) {
  double s = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}

// Central difference of f w.r.t. `entry`, divided by the step actually represented in T
// (entry + eps rounds in float), so only f's own rounding is left as noise.
template <typename T>
double central_difference(T& entry, T eps, const std::function<double()>& f) {
  const T saved = entry;
  entry = saved + eps;
  const T up = entry;
  const double f_up = f();
  entry = saved - eps;
  const T down = entry;
  const double f_down = f();
  entry = saved;
  return (f_up - f_down) / (static_cast<double>(up) - static_cast<double>(down));
}

struct GradCheck {
  std::vector<double> analytic, numeric;
  std::vector<std::string> where;   // a label per entry, for the report
  std::size_t skipped = 0;          // entries too close to a kink to difference
};

// Differences every entry of `wrt` (or those `skip` does not reject) against `grad`.
void difference_all(GradCheck& c, std::vector<float>& wrt, const std::vector<float>& grad, float eps,
                    const std::function<double()>& f, const std::string& name,
                    const std::function<bool(std::size_t)>& skip = nullptr) {
  for (std::size_t i = 0; i < wrt.size(); ++i) {
    if (skip && skip(i)) {
      ++c.skipped;
      continue;
    }
    c.numeric.push_back(central_difference(wrt[i], eps, f));
    c.analytic.push_back(grad[i]);
    c.where.push_back(name + "[" + std::to_string(i) + "]");
  }
}

enum class Case { ConvDx, ConvDw, ConvDb, Relu, Maxpool, DenseDx, DenseDw, DenseDb, SoftmaxXent, WholeModel };

// ---- per-layer cases: objective sum(forward(...) * r), so dL/dy = r goes into backward --------

// A layer y = forward(x, w, b) with backward(x, w, dL/dy) -> dx, dw, db (conv and dense): the
// gradient of one argument (0: x, 1: w, 2: b) against central differences of sum(y * r).
struct LayerSizes {
  std::size_t x, w, b, y;
};
using LayerForward = std::function<void(const float* x, const float* w, const float* b, float* y)>;
using LayerBackward =
    std::function<void(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db)>;

GradCheck check_layer(uint64_t seed, LayerSizes n, int argument, float eps, const LayerForward& forward,
                      const LayerBackward& backward) {
  SplitMix64 rng(seed);
  auto x = random_floats(n.x, rng, -1, 1);
  auto w = random_floats(n.w, rng, -1, 1);
  auto b = random_floats(n.b, rng, -1, 1);
  const auto r = random_floats(n.y, rng, -1, 1);
  std::vector<float> y(r.size()), dx(x.size(), NAN), dw(w.size(), NAN), db(b.size(), NAN);
  backward(x.data(), w.data(), r.data(), dx.data(), dw.data(), db.data());
  const auto f = [&] {
    forward(x.data(), w.data(), b.data(), y.data());
    return project(y, r);
  };
  GradCheck c;
  if (argument == 0) difference_all(c, x, dx, eps, f, "x");
  if (argument == 1) difference_all(c, w, dw, eps, f, "w");
  if (argument == 2) difference_all(c, b, db, eps, f, "b");
  return c;
}

GradCheck check_conv(Case which, float eps) {
  // Non-square, several channels both sides, batch 2: index mix-ups show.
  const ref::ConvShape s{2, 3, 7, 6, 4, 3};
  const LayerSizes n{std::size_t(s.n) * s.c_in * s.h * s.w, std::size_t(s.c_out) * s.c_in * s.k * s.k,
                     std::size_t(s.c_out), std::size_t(s.n) * s.c_out * s.out_h() * s.out_w()};
  return check_layer(
      11, n, int(which) - int(Case::ConvDx), eps,
      [&](const float* x, const float* w, const float* b, float* y) { ref::conv2d_forward(s, x, w, b, y); },
      [&](const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
        ref::conv2d_backward(s, x, w, dy, dx, dw, db);
      });
}

GradCheck check_relu(float eps) {
  SplitMix64 rng(12);
  auto x = random_floats(200, rng, -1, 1);
  const auto r = random_floats(x.size(), rng, -1, 1);
  std::vector<float> y(x.size()), dx(x.size(), NAN);
  ref::relu_forward(x.data(), y.data(), x.size());
  ref::relu_backward(y.data(), r.data(), dx.data(), x.size());
  const auto f = [&] {
    ref::relu_forward(x.data(), y.data(), x.size());
    return project(y, r);
  };
  GradCheck c;
  // Within eps of 0 the difference straddles the kink: skip those entries.
  const std::vector<float> x0 = x;
  difference_all(c, x, dx, eps, f, "x", [&](std::size_t i) { return std::fabs(x0[i]) <= 2 * eps; });
  return c;
}

GradCheck check_maxpool(float eps) {
  SplitMix64 rng(13);
  const ref::PoolShape s{2, 3, 7, 5};   // odd sides: the last row and column are dropped
  const std::size_t count = std::size_t(s.n) * s.c * s.h * s.w;
  // Distinct values 0.05 apart in random order: a step of eps < 0.025 never changes a
  // window's argmax, so there is no kink to straddle and no tie.
  std::vector<int32_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  shuffle(std::span<int32_t>(order), rng);
  std::vector<float> x(count);
  for (std::size_t i = 0; i < count; ++i) x[i] = 0.05f * (order[i] - static_cast<float>(count) / 2);
  const auto r = random_floats(std::size_t(s.n) * s.c * s.out_h() * s.out_w(), rng, -1, 1);
  std::vector<float> y(r.size()), dx(x.size(), NAN);
  ref::maxpool2x2_backward(s, x.data(), r.data(), dx.data());
  const auto f = [&] {
    ref::maxpool2x2_forward(s, x.data(), y.data());
    return project(y, r);
  };
  GradCheck c;
  difference_all(c, x, dx, eps, f, "x");
  return c;
}

GradCheck check_dense(Case which, float eps) {
  const ref::DenseShape s{3, 11, 5};
  const LayerSizes n{std::size_t(s.n) * s.in, std::size_t(s.out) * s.in, std::size_t(s.out), std::size_t(s.n) * s.out};
  return check_layer(
      14, n, int(which) - int(Case::DenseDx), eps,
      [&](const float* x, const float* w, const float* b, float* y) { ref::dense_forward(s, x, w, b, y); },
      [&](const float* x, const float* w, const float* dy, float* dx, float* dw, float* db) {
        ref::dense_backward(s, x, w, dy, dx, dw, db);
      });
}

GradCheck check_softmax_xent(float eps) {
  SplitMix64 rng(15);
  const int n = 4, classes = cnn::kClasses;
  const float scale = 1.0f / n;   // as in training: the mean loss
  auto z = random_floats(std::size_t(n) * classes, rng, -3, 3);
  const auto labels = random_labels(n, rng);
  std::vector<float> dz(z.size(), NAN);
  ref::softmax_xent_backward(z.data(), labels.data(), n, classes, scale, dz.data());
  const auto f = [&] { return scale * ref::softmax_xent_forward(z.data(), labels.data(), n, classes).loss_sum; };
  GradCheck c;
  difference_all(c, z, dz, eps, f, "logits");
  return c;
}

// ---- the whole model: float backward against differences of the double twin of the forward ----

GradCheck check_whole_model(double eps) {
  SplitMix64 rng(16);
  const int n = 2;
  std::vector<float> params(cnn::kReferenceParams);
  init_params(ModelSpec{}, params, 5);
  // Non-zero biases, so every bias path carries a gradient and ReLUs are not all symmetric.
  for (auto id : {cnn::kConv1B, cnn::kConv2B, cnn::kFc1B, cnn::kFc2B}) {
    const auto& t = cnn::param_tensors()[id];
    for (std::size_t i = 0; i < t.size; ++i) params[t.offset + i] = static_cast<float>(0.2 * rng.next_unit() - 0.1);
  }
  const auto images = random_floats(std::size_t(n) * cnn::kImagePixels, rng, 0, 1);
  const auto labels = random_labels(n, rng);

  std::vector<float> grads(cnn::kReferenceParams, NAN);
  ReferenceWorkspace ws;
  reference_forward_backward(params.data(), images.data(), labels.data(), n, 1.0f / n, grads.data(), ws);

  // The float model's function, evaluated exactly (in double): its differences carry no float
  // noise, so eps can be tiny and ReLU/pool kinks are almost never straddled.
  std::vector<double> params_d(params.begin(), params.end());
  const std::vector<double> images_d(images.begin(), images.end());
  const std::function<double()> f = [&] {
    return reference_forward_double(params_d.data(), images_d.data(), labels.data(), n).loss_sum / n;
  };

  GradCheck c;
  const int per_tensor = 20;
  for (const auto& t : cnn::param_tensors()) {
    std::vector<std::size_t> entries;
    if (t.size <= std::size_t(per_tensor)) {
      entries.resize(t.size);
      std::iota(entries.begin(), entries.end(), std::size_t{0});
    } else {
      for (int k = 0; k < per_tensor; ++k) entries.push_back(rng.below(t.size));
    }
    for (std::size_t i : entries) {
      double& p = params_d[t.offset + i];
      const double fd = central_difference(p, eps, f);
      const double fd_half = central_difference(p, eps / 2, f);
      // A kink within eps makes the two steps disagree (smooth: they agree to ~eps^2).
      if (std::fabs(fd - fd_half) > 1e-9 + 1e-6 * std::fabs(fd_half)) {
        ++c.skipped;
        continue;
      }
      c.numeric.push_back(fd_half);
      c.analytic.push_back(grads[t.offset + i]);
      c.where.push_back(std::string(t.name) + "[" + std::to_string(i) + "]");
    }
  }
  return c;
}

// ---- any model: the interpreter's float backward against differences of its double forward ----

// Up to `per_tensor` entries of every parameter tensor (all of a smaller one: every bias is
// represented), differenced through reference_forward_double with the same dropout masks as
// the float backward: a fixed key (seed, epoch) and fixed sample ids make each mask a constant,
// so the loss is piecewise smooth in the parameters (kinks only at ReLU zeros and pool argmax
// switches, which the two-step check below skips). `checked` counts the entries per tensor.
struct ModelGradCheck {
  GradCheck c;
  std::vector<int> checked;        // per parameter tensor
  double loss_training = 0, loss_inference = 0, loss_other_key = 0;   // the double forward's
};

ModelGradCheck check_model(const ModelSpec& model, double eps, int per_tensor, uint64_t seed) {
  const ModelShape& m = model.shape();
  SplitMix64 rng(seed);
  const int n = 2;
  std::vector<float> params(m.param_count);
  init_params(model, params, seed + 1);
  // Non-zero biases, so every bias path carries a gradient and ReLUs are not all symmetric.
  for (const auto& t : m.params)
    if (t.fan_in == 0)
      for (std::size_t i = 0; i < t.size; ++i) params[t.offset + i] = static_cast<float>(0.2 * rng.next_unit() - 0.1);
  const auto images = random_floats(std::size_t(n) * std::size_t(m.input.size()), rng, 0, 1);
  std::vector<uint8_t> labels(n);
  for (auto& l : labels) l = static_cast<uint8_t>(rng.below(uint64_t(m.classes)));
  // Sample ids as a data set's indices (not 0..n-1) and a key as the trainer sets per epoch.
  const std::vector<int32_t> ids{1234, 77};
  const SampleKeys keys{ids, DropoutKey{0xFDull, 5}};

  std::vector<float> grads(m.param_count, NAN);
  ReferenceWorkspace ws(model);
  reference_forward_backward(params.data(), images.data(), labels.data(), n, 1.0f / n, grads.data(), ws, keys);

  std::vector<double> params_d(params.begin(), params.end());
  const std::vector<double> images_d(images.begin(), images.end());
  const std::function<double()> f = [&] {
    return reference_forward_double(params_d.data(), images_d.data(), labels.data(), n, model, true, keys).loss_sum / n;
  };
  ModelGradCheck out;
  out.loss_training = f();
  out.loss_inference = reference_forward_double(params_d.data(), images_d.data(), labels.data(), n, model).loss_sum / n;
  out.loss_other_key =
      reference_forward_double(params_d.data(), images_d.data(), labels.data(), n, model, true,
                               SampleKeys{ids, DropoutKey{0xFDull, 6}})
          .loss_sum /
      n;
  out.checked.assign(m.params.size(), 0);
  for (std::size_t ti = 0; ti < m.params.size(); ++ti) {
    const ParamTensor& t = m.params[ti];
    std::vector<std::size_t> entries;
    if (t.size <= std::size_t(per_tensor)) {
      entries.resize(t.size);
      std::iota(entries.begin(), entries.end(), std::size_t{0});
    } else {
      for (int k = 0; k < per_tensor; ++k) entries.push_back(rng.below(t.size));
    }
    for (std::size_t i : entries) {
      double& p = params_d[t.offset + i];
      const double fd = central_difference(p, eps, f);
      const double fd_half = central_difference(p, eps / 2, f);
      // A kink within eps makes the two steps disagree (smooth: they agree to ~eps^2).
      if (std::fabs(fd - fd_half) > 1e-9 + 1e-6 * std::fabs(fd_half)) {
        ++out.c.skipped;
        continue;
      }
      out.c.numeric.push_back(fd_half);
      out.c.analytic.push_back(grads[t.offset + i]);
      out.c.where.push_back(t.name + "[" + std::to_string(i) + "]");
      ++out.checked[ti];
    }
  }
  return out;
}

// The verdict on a check: few skips, every entry within {atol, rtol}, the worst one reported.
void verify_grad_check(const GradCheck& c, double atol, double rtol) {
  QVERIFY(!c.numeric.empty());
  // Skips are for the rare kink within eps; many would mean the check checks nothing.
  QVERIFY2(c.skipped * 10 <= c.numeric.size() + c.skipped,
           qPrintable(QString("%1 of %2 entries skipped").arg(c.skipped).arg(c.numeric.size() + c.skipped)));

  std::size_t worst = 0, failures = 0;
  double worst_ratio = -1.0, max_abs = 0.0;
  for (std::size_t i = 0; i < c.numeric.size(); ++i) {
    const double diff = std::fabs(c.analytic[i] - c.numeric[i]);
    const double ratio = tolerance_ratio(c.analytic[i], c.numeric[i], {atol, rtol});
    if (!(ratio <= 1.0)) {
      ++failures;
      qInfo("  outside the tolerance: %s: analytic %.9g, numeric %.9g", c.where[i].c_str(), c.analytic[i], c.numeric[i]);
    }
    max_abs = std::max(max_abs, diff);
    if (!(ratio <= worst_ratio)) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  qInfo("%zu entries (%zu skipped): max |analytic - numeric| %.3g; worst vs tolerance %s: analytic %.9g, "
        "numeric %.9g (%.3g of the allowed)",
        c.numeric.size(), c.skipped, max_abs, c.where[worst].c_str(), c.analytic[worst], c.numeric[worst],
        worst_ratio);
  QCOMPARE(failures, std::size_t{0});
}

}  // namespace

class TestReferenceGrad : public QObject {
  Q_OBJECT

 private slots:
  void finite_differences_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<double>("eps");
    QTest::addColumn<double>("atol");
    QTest::addColumn<double>("rtol");
    // Conv and dense are linear in each argument, so differences have no truncation error at
    // any step: a large eps (0.25) shrinks the float rounding noise of the forward outputs
    // (~1e-7 x a few dozen outputs) relative to the step; atol 1e-5 leaves ~10x margin.
    QTest::addRow("conv dX") << int(Case::ConvDx) << 0.25 << 1e-5 << 1e-5;
    QTest::addRow("conv dW") << int(Case::ConvDw) << 0.25 << 1e-5 << 1e-5;
    QTest::addRow("conv dB") << int(Case::ConvDb) << 0.25 << 1e-5 << 1e-5;
    // ReLU and max pooling are piecewise linear: exact away from kinks, which the cases avoid
    // (relu skips |x| <= 2 eps; pooling uses values 0.05 apart), so only rounding remains.
    QTest::addRow("relu") << int(Case::Relu) << 1e-2 << 1e-5 << 1e-5;
    QTest::addRow("maxpool") << int(Case::Maxpool) << 1e-2 << 1e-5 << 1e-5;
    QTest::addRow("dense dX") << int(Case::DenseDx) << 0.25 << 1e-5 << 1e-5;
    QTest::addRow("dense dW") << int(Case::DenseDw) << 0.25 << 1e-5 << 1e-5;
    QTest::addRow("dense dB") << int(Case::DenseDb) << 0.25 << 1e-5 << 1e-5;
    // Smooth: truncation error ~ eps^2 |f'''| / 6 < 1e-7 at eps 1e-3; the loss is a double,
    // so the float dlogits' own rounding (~1e-8) is what is left.
    QTest::addRow("softmax-xent") << int(Case::SoftmaxXent) << 1e-3 << 1e-6 << 1e-5;
    // Double differences are exact to ~1e-10, so what is left is the float backward's rounding
    // (~1e-7 relative per layer; measured worst 2e-8 absolute). 1e-6 + 1e-4 relative keeps a
    // wide margin for a ReLU or pool argmax that float decides differently from double (that
    // moves an entry by one path's term) while any wiring error, O(1) relative, fails.
    QTest::addRow("whole model") << int(Case::WholeModel) << 1e-6 << 1e-6 << 1e-4;
  }

  void finite_differences() {
    QFETCH(int, which);
    QFETCH(double, eps);
    QFETCH(double, atol);
    QFETCH(double, rtol);
    const auto w = static_cast<Case>(which);
    GradCheck c;
    switch (w) {
      case Case::ConvDx:
      case Case::ConvDw:
      case Case::ConvDb: c = check_conv(w, float(eps)); break;
      case Case::Relu: c = check_relu(float(eps)); break;
      case Case::Maxpool: c = check_maxpool(float(eps)); break;
      case Case::DenseDx:
      case Case::DenseDw:
      case Case::DenseDb: c = check_dense(w, float(eps)); break;
      case Case::SoftmaxXent: c = check_softmax_xent(float(eps)); break;
      case Case::WholeModel: c = check_whole_model(eps); break;
    }
    verify_grad_check(c, atol, rtol);
  }

  // The whole loss of models outside the reference family through the interpreter: its float
  // backward against central differences of its double forward (the same loops), per model a
  // sample of every parameter tensor. Tolerances as the reference's whole-model row and for
  // the same reasons: the double differences are exact to ~1e-10 (eps 1e-6, the loss ~1 in
  // double), so what is left is the float backward's rounding, ~1e-7 relative per layer (a
  // 7x7 kernel or a dense layer over a few hundred inputs sums more terms, still < 1e-5
  // relative); 1e-6 absolute + 1e-4 relative keeps a wide margin for that and for a ReLU or
  // pool argmax float decides differently from double, while a wiring error (a wrong pad
  // offset, a window averaged over the padding, a mask not applied in backward) is O(1)
  // relative. Dropout runs with a fixed key and fixed sample ids: its masks are constants, so
  // the loss stays piecewise smooth and differences apply as anywhere else.
  void model_finite_differences_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("dropout");
    const auto row = [](const char* name, const char* text) {
      QTest::addRow("%s", name) << QString(text) << QString(text).contains("drop");
    };
    // Same padding with every kernel size, one input channel and three (non-square planes).
    row("same conv K=1,3,5,7, 1 channel", "9x8x1:conv3@1s-conv4@3s-conv3@5s-conv2@7s-dense4");
    row("same conv K=7,5,3,1, 3 channels", "8x9x3:conv3@7s-conv3@5s-conv2@3s-conv3@1s-dense3");
    // Valid convs of every size, 3 input channels.
    row("valid conv K=1,5,7,3", "15x13x3:conv3@1-conv3@5-conv2@7-conv3-dense5");
    // Average pooling, valid (the last odd row/column dropped) and same (its last window
    // averages the real pixels only), on odd sides.
    row("avgpool valid and same, odd sides", "11x9x2:conv3@3s-avgpool-conv3@3s-avgpool@s-dense4");
    row("avgpool same on the input's odd sides", "7x5x3:avgpool@s-conv4@3s-avgpool@s-dense3");
    // Max pooling same on odd sides (the padded window's max over its real pixels), then valid.
    row("maxpool same, odd sides", "9x7x1:conv4@3s-pool@s-conv3-pool@s-dense5");
    row("maxpool valid and same, 3 channels", "11x11x3:conv4@5s-pool-conv3@3s-pool@s-flatten-dense6");
    // Global average pooling into a dense head.
    row("gap", "8x8x3:conv4-conv5@3s-gap-dense8-dense4");
    // No ReLU and no bias: conv, hidden dense and the logits.
    row("_linear and _nobias", "7x7x3:conv4@3s_linear_nobias-pool@s-conv3_nobias-dense6_linear_nobias-dense3_nobias");
    // A dense layer straight on a conv's image (no flatten: C, H, W order) and after a pooling.
    row("dense after conv without flatten", "8x6x1:conv3-dense7-dense4");
    row("dense after pool without flatten", "9x9x3:conv2@5s_linear-avgpool@s-dense6-dense12");
    // Dropout on images (before a pooling, and on the input itself) and on vectors, several rates.
    row("dropout on images and vectors", "9x9x3:conv4@3s-drop30-pool@s-conv3-flatten-drop50-dense8-drop12.5-dense5");
    row("dropout on the input and after gap", "8x7x1:drop20-conv4@3s-drop80-conv3@1-gap-drop37.5-dense3");
    // A pure dense net with dropout between its layers.
    row("pure dense net with dropout", "6x5x2:dense12-drop25-dense8_linear-drop50-dense3");
  }
  void model_finite_differences() {
    QFETCH(QString, model);
    QFETCH(bool, dropout);
    const ModelSpec spec = model_from_text(model.toStdString());
    QCOMPARE(QString::fromStdString(model_text(spec)), model);   // the rows are canonical texts
    // Every tensor: 12 entries of each weight (biases of a few units: all of them).
    const ModelGradCheck m = check_model(spec, 1e-6, 12, 16);
    for (std::size_t t = 0; t < m.checked.size(); ++t)
      QVERIFY2(m.checked[t] > 0, qPrintable(QString("no entry of %1 checked")
                                                .arg(QString::fromStdString(spec.shape().params[t].name))));
    // The masks are really there (training differs from inference, and another epoch's key
    // draws others), and nowhere without dropout.
    qInfo("loss: training %.9g, inference %.9g, another key %.9g", m.loss_training, m.loss_inference,
          m.loss_other_key);
    QCOMPARE(m.loss_training != m.loss_inference, dropout);
    QCOMPARE(m.loss_training != m.loss_other_key, dropout);
    verify_grad_check(m.c, 1e-6, 1e-4);
  }

  // ---- forward layouts and tie rules, exactly ------------------------------------------------

  void conv_is_cross_correlation_oihw_data() {
    QTest::addColumn<int>("co");
    QTest::addColumn<int>("ci");
    QTest::addColumn<int>("ky");
    QTest::addColumn<int>("kx");
    QTest::addRow("co0 ci0 centre") << 0 << 0 << 1 << 1;
    QTest::addRow("co0 ci1 top-right") << 0 << 1 << 0 << 2;
    QTest::addRow("co1 ci0 bottom-left") << 1 << 0 << 2 << 0;
    QTest::addRow("co1 ci1 top-left") << 1 << 1 << 0 << 0;
  }
  void conv_is_cross_correlation_oihw() {
    // A one-hot kernel w[co,ci,ky,kx] = 1 copies input channel ci, shifted by (ky, kx), to output
    // co: y[co, oy, ox] = x[ci, oy+ky, ox+kx] + bias[co] (not flipped, as PyTorch/Keras compute).
    QFETCH(int, co);
    QFETCH(int, ci);
    QFETCH(int, ky);
    QFETCH(int, kx);
    const ref::ConvShape s{1, 2, 5, 4, 2, 3};
    std::vector<float> x(2 * 5 * 4), w(2 * 2 * 3 * 3, 0.0f), b{10.0f, 20.0f}, y(2 * 3 * 2, NAN);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i);
    w[((co * 2 + ci) * 3 + ky) * 3 + kx] = 1.0f;
    ref::conv2d_forward(s, x.data(), w.data(), b.data(), y.data());
    for (int o = 0; o < 2; ++o)
      for (int oy = 0; oy < 3; ++oy)
        for (int ox = 0; ox < 2; ++ox) {
          const float expected = b[o] + (o == co ? x[(ci * 5 + oy + ky) * 4 + ox + kx] : 0.0f);
          QCOMPARE(y[(o * 3 + oy) * 2 + ox], expected);
        }
  }

  void dense_is_x_times_w_transposed() {
    // x [2,3], W [2 outputs, 3 inputs]: y[n,o] = sum_i x[n,i] W[o,i] + b[o].
    const ref::DenseShape s{2, 3, 2};
    const std::vector<float> x{1, 2, 3, 4, 5, 6}, w{1, 0, -1, 0.5f, 0.25f, 2}, b{0.5f, -1};
    std::vector<float> y(4);
    ref::dense_forward(s, x.data(), w.data(), b.data(), y.data());
    QCOMPARE(y[0], 1 - 3 + 0.5f);
    QCOMPARE(y[1], 0.5f + 0.5f + 6 - 1);
    QCOMPARE(y[2], 4 - 6 + 0.5f);
    QCOMPARE(y[3], 2 + 1.25f + 12 - 1);
  }

  void maxpool_floors_and_routes_ties_to_first() {
    // 3x5 input -> 1x2 output; the last row and column are dropped.
    const ref::PoolShape s{1, 1, 3, 5};
    const std::vector<float> x{1, 7, 2, 2, 99,    //
                               7, 3, 2, 2, 99,    //
                               99, 99, 99, 99, 99};
    std::vector<float> y(2), dx(x.size(), NAN);
    ref::maxpool2x2_forward(s, x.data(), y.data());
    QCOMPARE(y[0], 7.0f);
    QCOMPARE(y[1], 2.0f);
    const std::vector<float> dy{1.5f, -2.5f};
    ref::maxpool2x2_backward(s, x.data(), dy.data(), dx.data());
    // Window 0 ties at (0,1) and (1,0): the first in row-major order, (0,1), gets it.
    // Window 1 is all 2s: (0,0) of the window, i.e. x[0][2], gets it.
    const std::vector<float> expected{0, 1.5f, -2.5f, 0, 0,  //
                                      0, 0, 0, 0, 0,         //
                                      0, 0, 0, 0, 0};
    for (std::size_t i = 0; i < x.size(); ++i) QCOMPARE(dx[i], expected[i]);
  }

  void relu_backward_is_zero_at_zero() {
    const std::vector<float> x{-1, 0, 0.5f, -0.0f};
    std::vector<float> y(4), dx(4);
    const std::vector<float> dy{1, 2, 3, 4};
    ref::relu_forward(x.data(), y.data(), 4);
    ref::relu_backward(y.data(), dy.data(), dx.data(), 4);
    QCOMPARE(dx, (std::vector<float>{0, 0, 3, 0}));
  }

  void accuracy_counting() {
    // Argmax == label counts; ties go to the lowest class index.
    const int classes = 4;
    const std::vector<float> z{0, 5, 1, 2,      // argmax 1, label 1: correct
                               3, 0, 0, 0,      // argmax 0, label 2: wrong
                               1, 4, 4, 0,      // tie 1/2 -> 1, label 1: correct
                               1, 4, 4, 0,      // tie 1/2 -> 1, label 2: wrong
                               0, 0, 0, 0};     // all tie -> 0, label 0: correct
    const std::vector<uint8_t> labels{1, 2, 1, 2, 0};
    const BatchStats st = ref::softmax_xent_forward(z.data(), labels.data(), 5, classes);
    QCOMPARE(st.correct, int64_t{3});
    QCOMPARE(st.samples, int64_t{5});
    // Loss of the all-equal row is ln 4; the whole sum against a direct log-softmax.
    double expected = 0;
    for (int i = 0; i < 5; ++i) {
      double sum = 0;
      for (int k = 0; k < classes; ++k) sum += std::exp(double(z[i * classes + k]));
      expected += std::log(sum) - z[i * classes + labels[i]];
    }
    QVERIFY(within(st.loss_sum, expected, {1e-12, 0}));
  }

  void rejects_bad_labels() {
    const std::vector<float> z(10, 0.0f);
    const std::vector<uint8_t> labels{10};
    QVERIFY_THROWS_EXCEPTION(DataError, ref::softmax_xent_forward(z.data(), labels.data(), 1, 10));
  }

  // ---- the whole model ------------------------------------------------------------------------

  void empty_batch_gives_zero_gradient() {
    std::vector<float> params(cnn::kReferenceParams);
    init_params(ModelSpec{}, params, 1);
    std::vector<float> grads(cnn::kReferenceParams, 1.0f);
    ReferenceWorkspace ws;
    const BatchStats st = reference_forward_backward(params.data(), nullptr, nullptr, 0, 1.0f, grads.data(), ws);
    QCOMPARE(st.samples, int64_t{0});
    QCOMPARE(st.correct, int64_t{0});
    QCOMPARE(st.loss_sum, 0.0);
    QVERIFY(std::all_of(grads.begin(), grads.end(), [](float g) { return g == 0.0f; }));
    QCOMPARE(reference_forward(params.data(), nullptr, nullptr, 0, ws).samples, int64_t{0});
  }

  void uniform_logits_give_ln10() {
    // All-zero parameters: every logit is 0, so each sample's loss is ln 10, the prediction is
    // class 0 (lowest index wins the tie), and only fc2.bias has a gradient: softmax - onehot.
    SplitMix64 rng(3);
    const int n = 7;
    const float scale = 0.5f;
    const std::vector<float> params(cnn::kReferenceParams, 0.0f);
    const auto images = random_floats(std::size_t(n) * cnn::kImagePixels, rng, 0, 1);
    auto labels = random_labels(n, rng);
    labels[0] = 0;
    labels[1] = 3;
    std::vector<float> grads(cnn::kReferenceParams, NAN);
    ReferenceWorkspace ws;
    const BatchStats st =
        reference_forward_backward(params.data(), images.data(), labels.data(), n, scale, grads.data(), ws);
    QCOMPARE(st.samples, int64_t{n});
    QVERIFY(within(st.loss_sum, n * std::log(10.0), {1e-9, 0}));
    QCOMPARE(st.correct, int64_t(std::count(labels.begin(), labels.end(), uint8_t{0})));

    const auto& fc2b = cnn::param_tensors()[cnn::kFc2B];
    for (std::size_t i = 0; i < cnn::kReferenceParams; ++i) {
      if (i >= fc2b.offset && i < fc2b.offset + fc2b.size) continue;
      QCOMPARE(grads[i], 0.0f);
    }
    for (int k = 0; k < cnn::kClasses; ++k) {
      const double expected = scale * (0.1 * n - std::count(labels.begin(), labels.end(), uint8_t(k)));
      QVERIFY(within(grads[fc2b.offset + k], expected, {1e-6, 0}));
    }
    const BatchStats fwd = reference_forward(params.data(), images.data(), labels.data(), n, ws);
    QCOMPARE(fwd.loss_sum, st.loss_sum);
    QCOMPARE(fwd.correct, st.correct);
  }

  void gradients_add_over_samples() {
    // The engines split a batch into chunks and add the chunks' gradients (and the replicas'):
    // the batch gradient must be the sum of per-sample gradients.
    SplitMix64 rng(4);
    const int n = 3;
    std::vector<float> params(cnn::kReferenceParams);
    init_params(ModelSpec{}, params, 9);
    const auto images = random_floats(std::size_t(n) * cnn::kImagePixels, rng, 0, 1);
    const auto labels = random_labels(n, rng);
    ReferenceWorkspace ws;
    std::vector<float> batch(cnn::kReferenceParams), one(cnn::kReferenceParams);
    std::vector<double> sum(cnn::kReferenceParams, 0.0);
    const BatchStats all =
        reference_forward_backward(params.data(), images.data(), labels.data(), n, 1.0f, batch.data(), ws);
    double loss = 0;
    for (int i = 0; i < n; ++i) {
      loss += reference_forward_backward(params.data(), images.data() + i * cnn::kImagePixels, labels.data() + i,
                                         1, 1.0f, one.data(), ws)
                  .loss_sum;
      for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += one[k];
    }
    QVERIFY(within(all.loss_sum, loss, {0, 1e-9}));
    double max_diff = 0, max_grad = 0;
    for (std::size_t k = 0; k < sum.size(); ++k) {
      max_diff = std::max(max_diff, std::fabs(sum[k] - batch[k]));
      max_grad = std::max(max_grad, std::fabs(sum[k]));
    }
    qInfo("batch vs summed per-sample gradients: max diff %.3g (max |grad| %.3g)", max_diff, max_grad);
    QVERIFY(max_grad > 0);
    QVERIFY(max_diff <= 1e-6 * max_grad);
  }

  void float_and_double_forward_agree() {
    SplitMix64 rng(5);
    const int n = 4;
    std::vector<float> params(cnn::kReferenceParams);
    init_params(ModelSpec{}, params, 2);
    const auto images = random_floats(std::size_t(n) * cnn::kImagePixels, rng, 0, 1);
    const auto labels = random_labels(n, rng);
    ReferenceWorkspace ws;
    const BatchStats f = reference_forward(params.data(), images.data(), labels.data(), n, ws);
    const std::vector<double> pd(params.begin(), params.end()), id(images.begin(), images.end());
    const BatchStats d = reference_forward_double(pd.data(), id.data(), labels.data(), n);
    QVERIFY(within(f.loss_sum, d.loss_sum, {0, 1e-5}));
    QCOMPARE(f.correct, d.correct);
  }
};

QTEST_GUILESS_MAIN(TestReferenceGrad)
#include "test_reference_grad.moc"

// The op-consistency test: every available backend against the reference engine (loss, hits,
// every gradient tensor, Adam, evaluation, empty batch) over several batch sizes, printing the
// worst difference of each check; plus the oneDNN engine's threading and argument checks and
// the device-string grammar (parse_devices) as a data-driven table.
#include <QtTest>

#include <thread>
#include <vector>

#include "backends/devices.h"
#include "backends/onednn/blocked_pool.h"
#include "backends/onednn/conv1_pool.h"
#include "backends/onednn/onednn_engine.h"
#include "backends/selftest.h"
#include "model/cnn_spec.h"
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
  std::vector<float> p(cnn::kParamCount);
  cnn::init_params(p, seed);
  return p;
}

}  // namespace

class TestBackendOps : public QObject {
  Q_OBJECT

 private slots:
  // ---- every backend against the reference ----
  void matches_reference_data() {
    QTest::addColumn<QString>("target");
    QTest::addColumn<int>("batch");
    for (const QString& target : {QString("onednn"), QString("cuda")})
      for (int batch : {1, 3, 37, 64, 128})
        QTest::addRow("%s/batch=%d", qPrintable(target), batch) << target << batch;
    // oneDNN without Winograd: what runs on CPUs lacking its AVX-512 kernels.
    for (int batch : {37, 128}) QTest::addRow("onednn-direct/batch=%d", batch) << QString("onednn-direct") << batch;
  }
  void matches_reference() {
    QFETCH(QString, target);
    QFETCH(int, batch);
    if (target == "cuda") {
      const DeviceInventory inv = query_devices();
      if (inv.gpus.empty()) QSKIP(qPrintable("no GPU: " + QString::fromStdString(inv.gpu_note)));
    }
    const bool direct = target == "onednn-direct";
    if (direct) qputenv("MB_ONEDNN_DIRECT", "1");
    SelftestOptions opt;
    opt.targets = {direct ? std::string("onednn") : target.toStdString()};
    opt.batches = {batch};
    const auto cases = run_selftest(opt);
    if (direct) qunsetenv("MB_ONEDNN_DIRECT");
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
  // engine computes alone: no shared state, no thread-count dependence in the kernels.
  void onednn_concurrent_replicas_are_deterministic() {
    const Dataset data = test::make_synthetic_dataset(256, 3);
    const auto params = random_params(5);
    std::vector<int32_t> idx_a(64), idx_b(37);
    for (int i = 0; i < 64; ++i) idx_a[i] = i * 3;
    for (int i = 0; i < 37; ++i) idx_b[i] = 255 - i * 5;

    auto run = [&](std::span<const int32_t> idx, std::vector<float>& grads, BatchStats& stats) {
      auto e = make_onednn_engine(64);
      e->bind_data(data, data);
      e->set_params(params);
      for (int rep = 0; rep < 3; ++rep) stats = e->forward_backward(idx, 0.5f);
      grads.resize(cnn::kParamCount);
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

  // The AVX-512 Adam is the reference loop's arithmetic exactly (no FMA contraction), so a
  // oneDNN replica and a reference replica fed equal gradients stay bit-identical.
  void onednn_adam_is_bit_identical_to_reference() {
    const Dataset data = test::make_synthetic_dataset(64, 9);
    auto e = make_onednn_engine(64);
    e->bind_data(data, data);
    std::vector<float> host = random_params(11), m(cnn::kParamCount, 0.0f), v(cnn::kParamCount, 0.0f);
    e->set_params(host);
    std::vector<int32_t> idx(64);
    for (int i = 0; i < 64; ++i) idx[i] = i;
    AdamConfig cfg;
    cfg.lr = 3e-3f;
    std::vector<float> g(cnn::kParamCount), got(cnn::kParamCount);
    for (int step = 1; step <= 3; ++step) {
      e->forward_backward(idx, 1.0f / 64);
      e->get_grads(g);
      e->apply_adam(cfg, step);
      adam_update_reference(cfg, step, host, g, m, v);
      e->get_params(got);
      QVERIFY2(got == host, qPrintable(QString("step %1").arg(step)));
    }
  }

  // The hand-written loops next to oneDNN (fused conv1+ReLU+pool, pool2): their portable
  // template paths (what CPUs without AVX-512 run) and every channel block against the
  // AVX-512 nChw16c path, so the fallbacks are tested on this machine too.
  void fused_conv1_paths_agree() {
    constexpr int n = 3, C = cnn::kConv1Out, S = cnn::kPool1Side;
    std::vector<float> images(n * cnn::kImagePixels);
    SplitMix64 rng(21);
    for (std::size_t i = 0; i < images.size(); ++i)   // zero background on the left: exact ties
      images[i] = (i % 28) < 10 ? 0.0f : static_cast<float>(rng.next_unit());
    std::vector<float> w(C * onednn::kConv1Taps), taps(w.size()), bias(C);
    for (auto& x : w) x = static_cast<float>(rng.next_unit() - 0.5);
    for (auto& x : bias) x = static_cast<float>(0.2 * (rng.next_unit() - 0.5));
    onednn::conv1_weights_to_taps(w.data(), taps.data());
    const std::vector<float> d_pooled16 = grid_values(std::size_t(n) * C * S * S, 5);

    std::vector<float> p16(d_pooled16.size());
    std::vector<uint8_t> a16(p16.size());
    std::vector<double> dt16(taps.size()), db16(C);
    onednn::conv1_relu_pool_forward(n, images.data(), taps.data(), bias.data(), 16, p16.data(), a16.data());
    onednn::conv1_relu_pool_backward(n, images.data(), p16.data(), d_pooled16.data(), a16.data(), 16, dt16.data(),
                                     db16.data());
    int positive = 0;
    for (float v : p16) positive += v > 0.0f;
    QVERIFY(positive > int(p16.size()) / 5 && positive < int(p16.size()));   // ReLU both ways

    for (int block : {16, 8, 1}) {
      std::vector<float> p(p16.size()), dp(p16.size());
      std::vector<uint8_t> a(p16.size());
      std::vector<double> dt(taps.size()), db(C);
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < S * S; ++i)
            dp[blocked_at(s, c, i / S, i % S, C, S, block)] = d_pooled16[blocked_at(s, c, i / S, i % S, C, S, 16)];
      onednn::conv1_relu_pool_forward(n, images.data(), taps.data(), bias.data(), block, p.data(), a.data(),
                                      onednn::Simd::Portable);
      onednn::conv1_relu_pool_backward(n, images.data(), p.data(), dp.data(), a.data(), block, dt.data(), db.data(),
                                       onednn::Simd::Portable);
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c)
          for (int i = 0; i < S * S; ++i) {
            const std::size_t x = blocked_at(s, c, i / S, i % S, C, S, block), r = blocked_at(s, c, i / S, i % S, C, S, 16);
            // FMA (AVX-512) against separate multiply-add: a few ulps.
            QVERIFY2(within(p[x], p16[r], {1e-6, 1e-5}), qPrintable(QString("block %1 pooled").arg(block)));
            if (p16[r] > 0.0f) QCOMPARE(a[x], a16[r]);
          }
      for (std::size_t i = 0; i < dt.size(); ++i) QVERIFY(within(dt[i], dt16[i], {1e-6, 1e-5}));
      for (int c = 0; c < C; ++c) QVERIFY(within(db[c], db16[c], {1e-6, 1e-5}));
    }
  }

  void pool2_paths_agree() {
    constexpr int n = 2, C = cnn::kConv2Out, IN = cnn::kConv2Side, OUT = cnn::kPool2Side;
    const std::vector<float> in16 = grid_values(std::size_t(n) * C * IN * IN, 7);
    const std::vector<float> d_out_plain = grid_values(std::size_t(n) * C * OUT * OUT, 8);
    // The production case (nChw16c -> plain NCHW) decides; every path must agree bit for bit
    // (selection only, no arithmetic).
    onednn::PoolShape ref_shape{n, C, IN, OUT, 16, 1};
    std::vector<float> ref_out(d_out_plain.size()), ref_din(in16.size());
    std::vector<uint8_t> ref_arg(ref_out.size());
    onednn::max_pool_forward(ref_shape, in16.data(), ref_out.data(), ref_arg.data());
    onednn::max_pool_backward_relu(ref_shape, d_out_plain.data(), ref_out.data(), ref_arg.data(), ref_din.data());

    struct Case {
      int in_block, out_block;
      onednn::Simd simd;
    };
    for (const Case& k : {Case{16, 1, onednn::Simd::Portable}, Case{16, 16, onednn::Simd::Auto},
                          Case{16, 16, onednn::Simd::Portable}, Case{8, 8, onednn::Simd::Portable},
                          Case{8, 1, onednn::Simd::Portable}, Case{1, 1, onednn::Simd::Portable}}) {
      const QString label = QString("in block %1, out block %2, %3")
                                .arg(k.in_block)
                                .arg(k.out_block)
                                .arg(k.simd == onednn::Simd::Auto ? "auto" : "portable");
      onednn::PoolShape shape{n, C, IN, OUT, k.in_block, k.out_block};
      std::vector<float> in(in16.size()), d_out(d_out_plain.size()), out(d_out.size()), d_in(in.size(), 7.0f);
      std::vector<uint8_t> arg(out.size());
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c) {
          for (int i = 0; i < IN * IN; ++i)
            in[blocked_at(s, c, i / IN, i % IN, C, IN, k.in_block)] = in16[blocked_at(s, c, i / IN, i % IN, C, IN, 16)];
          for (int i = 0; i < OUT * OUT; ++i)
            d_out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, k.out_block)] =
                d_out_plain[blocked_at(s, c, i / OUT, i % OUT, C, OUT, 1)];
        }
      onednn::max_pool_forward(shape, in.data(), out.data(), arg.data(), k.simd);
      onednn::max_pool_backward_relu(shape, d_out.data(), out.data(), arg.data(), d_in.data(), k.simd);
      for (int s = 0; s < n; ++s)
        for (int c = 0; c < C; ++c) {
          for (int i = 0; i < OUT * OUT; ++i)
            QVERIFY2(out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, k.out_block)] ==
                         ref_out[blocked_at(s, c, i / OUT, i % OUT, C, OUT, 1)],
                     qPrintable(label));
          for (int i = 0; i < IN * IN; ++i)   // every element written, including the dropped row/column
            QVERIFY2(d_in[blocked_at(s, c, i / IN, i % IN, C, IN, k.in_block)] ==
                         ref_din[blocked_at(s, c, i / IN, i % IN, C, IN, 16)],
                     qPrintable(label));
        }
    }
  }

  void onednn_arguments_and_chunking() {
    const Dataset data = test::make_synthetic_dataset(16, 3);
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
    std::vector<float> g_chunked(cnn::kParamCount), g_whole(cnn::kParamCount);
    e->get_grads(g_chunked);
    big->get_grads(g_whole);
    double scale = 0;
    for (float g : g_whole) scale = std::max(scale, double(std::fabs(g)));
    const WorstElement worst = worst_element(g_chunked, g_whole, {1e-4 * scale, 0});   // 1e-4 of the largest
    QVERIFY2(scale > 0 && worst.ratio <= 1.0, qPrintable(QString("worst %1 of %2").arg(worst.max_abs_err).arg(scale)));
    QCOMPARE(QString::fromStdString(e->device_name()), QString("cpu (oneDNN)"));
    QCOMPARE(QString::fromStdString(onednn_version()).count('.'), 2);
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

  void backend_names_resolve() {
    QCOMPARE(QString::fromStdString(engine_backend_name(DeviceKind::Cpu, "auto")), QString("onednn"));
    QCOMPARE(QString::fromStdString(engine_backend_name(DeviceKind::Cpu, "reference")), QString("reference"));
    QCOMPARE(QString::fromStdString(engine_backend_name(DeviceKind::Cuda, "auto")), QString("cuda"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, engine_backend_name(DeviceKind::Cpu, "cuda"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, engine_backend_name(DeviceKind::Cuda, "onednn"));
    QVERIFY_THROWS_EXCEPTION(ConfigError, engine_backend_name(DeviceKind::Cpu, "fast"));
    QCOMPARE(resolve_backend(DeviceKind::Cpu, "onednn"), Backend::OneDnn);
    QCOMPARE(resolve_backend(DeviceKind::Cuda, "cuda"), Backend::Cuda);
    for (Backend b : kAllBackends) QCOMPARE(parse_backend(to_string(b)), std::optional<Backend>(b));
    QCOMPARE(parse_backend("auto"), std::optional<Backend>());   // a choice, not a backend
    auto e = make_engine({DeviceKind::Cpu, 0}, "reference", 4);
    QCOMPARE(QString::fromStdString(e->device_name()), QString("cpu (reference)"));
  }

  void cpu_devices_validate_and_communicate() {
    const DeviceInventory inv = query_devices();
    QVERIFY(inv.cpu_cores >= 1);
    validate_devices(parse_devices("cpu:2"), inv);   // more replicas than cores only warns
    validate_devices(parse_devices(fmt::format("cpu:{}", inv.cpu_cores + 1)), inv);
    QVERIFY_THROWS_EXCEPTION(ConfigError, validate_devices({}, inv));
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
    QVERIFY(test::expect_error<ConfigError>([&] { validate_devices(cuda, inv); }, "without CUDA"));
    QVERIFY(test::expect_error<ConfigError>([&] { make_engine(cuda.front(), "auto", 8); }, "without CUDA"));
    QVERIFY(test::expect_error<ConfigError>([&] { make_communicators(cuda, nullptr); }, "without CUDA"));
    QVERIFY(QString::fromStdString(components_summary()).contains("CUDA: not built"));
#endif
  }

  void gpu_ordinals_must_exist() {
    const DeviceInventory inv = query_devices();
    if (inv.gpus.empty()) QSKIP(qPrintable("no GPU: " + QString::fromStdString(inv.gpu_note)));
    const auto bad = parse_devices(fmt::format("cuda:{}", inv.gpus.size()));
    QVERIFY_THROWS_EXCEPTION(ConfigError, validate_devices(bad, inv));
    validate_devices(parse_devices("cuda:0"), inv);
  }
};

QTEST_GUILESS_MAIN(TestBackendOps)
#include "test_backend_ops.moc"

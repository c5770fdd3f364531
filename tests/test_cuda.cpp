// Tests of the CUDA backend. Without a GPU (or a CUDA build) they check that the backend
// fails politely: no GPUs listed, with a reason; engines and communicators refuse with a
// DeviceError naming the device; the GPU-only tests skip with the reason. With a GPU they
// compare the CUDA engine against the reference engine (forward metrics, every gradient
// tensor, also with nonzero biases and with exact ties in max pooling; the Adam kernel to
// float rounding; whole training steps with and without CUDA graphs, with indices staged or
// read from the epoch order on the device, gradients included; TF32 within its own
// tolerance), check that warm_up leaves parameters and moments as they were, test both
// device all-reduces with exactly representable values, check that 2 replicas on one GPU
// match 1 replica on the same global batch (including steps where one replica has no
// samples), and that an injected failure ends a multi-replica GPU run without a hang (the
// NCCL variant needs two GPUs), that the warm-up's measured cuDNN choices never use tensor
// cores in FP32, that the standard step shape runs as a CUDA graph (nodes found from the
// capture itself; at most 12 on the fused path, --cuda-path fused, which is compared with
// the reference too) and that the run record counts every step as a graph replay or eager,
// and that injected faults (--inject-fault: a device stall, an abort mid-step) end a run in
// bounded time. One NCCL rank initialises, captures and aborts a real NCCL communicator, but
// its all-reduce moves no data (NCCL makes a one-rank in-place all-reduce a no-op, and
// refuses two ranks on one GPU): NCCL's sums are tested only with two GPUs. The decision logic
// itself is tested GPU-free in test_gpu_policy and test_deadlines. bench/gpu_check.sh runs
// this early; every engine here measures cuDNN's algorithms for at most kTuneS per step shape.
#include <QtTest>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "util/on_threads.h"
#include "config/train_options.h"
#include "backends/devices.h"
#include "model/cnn_spec.h"
#include "model/init_params.h"
#include "util/engine_report.h"
#include "cnn_fixtures.h"
#include "test_support.h"
#include "trainer/mirrored_trainer.h"
#include "util/error.h"
#include "util/spin_barrier.h"

#ifdef MB_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/device_floats.h"
#include "backends/reference/reference_engine.h"
#include "optim/adam.h"
#endif

using namespace mb;

namespace {

#ifdef MB_HAVE_CUDA
double max_abs(std::span<const float> v) {
  double m = 0;
  for (float x : v) m = std::max(m, double(std::fabs(x)));
  return m;
}

// Every parameter tensor of the flat buffers within atol (relative to the tensor's scale) + rtol.
void verify_tensors(const std::vector<float>& got, const std::vector<float>& want, double atol_scale, double rtol,
                    const char* what) {
  const std::string bad = test::tensor_mismatch(got, want, atol_scale, rtol, what);
  QVERIFY2(bad.empty(), bad.c_str());
}

// NCCL communicators for distinct GPUs of this process, over in-process host communicators.
std::vector<std::unique_ptr<Communicator>> nccl_comms(const std::vector<int>& devices) {
  return cuda::make_nccl_communicators(devices, make_thread_communicators(int(devices.size())));
}

// A training step of `indices` (this replica's share of a global batch of `global` samples).
TrainStep step_of(std::span<const int32_t> indices, int adam_step, int64_t global = -1) {
  TrainStep s;
  s.indices = indices;
  s.global_batch = global < 0 ? int64_t(indices.size()) : global;
  s.grad_scale = 1.0f / float(std::max<int64_t>(1, s.global_batch));
  s.adam_step = adam_step;
  return s;
}

std::vector<int32_t> batch_indices(int n, int salt, int64_t count) {
  std::vector<int32_t> idx(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) idx[i] = static_cast<int32_t>((i * 7 + salt * 13) % count);
  return idx;
}

using test::with_biases_and_ties;

// A real engine whose replica `rank` throws in train_step number `step` before enqueueing
// anything (the injected failure); otherwise every call goes to the engine.
class FailingEngine final : public ReplicaEngine {
 public:
  FailingEngine(std::unique_ptr<ReplicaEngine> inner, int rank, int64_t step)
      : inner_(std::move(inner)), rank_(rank), step_(step) {}
  std::string device_name() const override { return inner_->device_name(); }
  const ModelSpec& model() const override { return inner_->model(); }
  void bind_data(const Dataset& t, const Dataset& v) override { inner_->bind_data(t, v); }
  void set_params(std::span<const float> p) override { inner_->set_params(p); }
  void get_params(std::span<float> p) const override { inner_->get_params(p); }
  BatchStats forward_backward(std::span<const int32_t> i, float s, PhaseTimes* t) override {
    return inner_->forward_backward(i, s, t);
  }
  float* grad_buffer() override { return inner_->grad_buffer(); }
  void get_grads(std::span<float> g) const override { inner_->get_grads(g); }
  void apply_adam(const AdamConfig& c, int64_t s) override { inner_->apply_adam(c, s); }
  void begin_epoch(std::span<const int32_t> o) override { inner_->begin_epoch(o); }
  void warm_up(std::span<const StepShape> s, Communicator& c) override { inner_->warm_up(s, c); }
  void train_step(const TrainStep& st, Communicator& comm, const AdamConfig& cfg, PhaseTimes& t) override {
    if (comm.rank() == rank_ && st.adam_step == step_)
      throw DeviceError(fmt::format("injected failure on replica {} at step {}", rank_, step_));
    inner_->train_step(st, comm, cfg, t);
  }
  BatchStats take_train_stats() override { return inner_->take_train_stats(); }
  CommProfile comm_profile() const override { return inner_->comm_profile(); }
  EngineReport engine_report() const override { return inner_->engine_report(); }
  int steps_per_report() const override { return inner_->steps_per_report(); }
  BatchStats evaluate(std::span<const int32_t> i) override { return inner_->evaluate(i); }
  BatchStats evaluate_train(std::span<const int32_t> i) override { return inner_->evaluate_train(i); }
  void synchronize() override { inner_->synchronize(); }

 private:
  std::unique_ptr<ReplicaEngine> inner_;
  const int rank_;
  const int64_t step_;
};

// The engines' options of these tests (config/engine_options.h), as a command line gives them:
// a short cuDNN tuning budget (the default 3 s a step shape would spend a minute of the GPU
// check here; 1 s still measures, so fp32_algorithms_never_use_tensor_ops sees measured
// choices), the step path, graphs, an injected fault.
constexpr const char* kTuneS = "1";
EngineOptions engine_options(const QString& path = "cudnn", bool graphs = true, const QString& fault = "none") {
  TrainConfig c;
  set_option(train_option("cudnn_tune"), c, kTuneS);
  set_option(train_option("cuda_path"), c, path.toStdString());
  set_option(train_option("cuda_graphs"), c, graphs ? "true" : "false");
  set_option(train_option("inject_fault"), c, fault.toStdString());
  return c.engine;
}
#endif

}  // namespace

class TestCuda : public QObject {
  Q_OBJECT

 private:
  std::vector<GpuInfo> gpus_;
  std::string why_none_;
  Dataset train_ = test::make_synthetic_dataset(256, 11, "synthetic/train");
  Dataset val_ = test::make_synthetic_dataset(100, 12, "synthetic/val");
  std::vector<float> init_ = std::vector<float>(cnn::kReferenceParams);

  bool have_gpu() const { return !gpus_.empty(); }

 private slots:
  void initTestCase() {
    init_params(ModelSpec{}, init_, 42);
#ifdef MB_HAVE_CUDA
    gpus_ = cuda::list_gpus(&why_none_);
    qInfo("CUDA components: %s", cuda::versions().c_str());
    if (gpus_.empty()) qInfo("no usable GPU: %s", why_none_.c_str());
    for (const auto& g : gpus_) qInfo("cuda:%d %s, cc %d.%d", g.index, g.name.c_str(), g.cc_major, g.cc_minor);
#endif
  }

  // --- what a GPU-less machine can check -----------------------------------------------

  void list_gpus_explains_an_empty_list() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    std::string why;
    std::vector<GpuInfo> gpus;
    try {
      gpus = cuda::list_gpus(&why);
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("list_gpus threw: %1").arg(e.what())));
    }
    if (gpus.empty()) {
      QVERIFY2(!why.empty(), "an empty GPU list must come with a reason");
    } else {
      for (const auto& g : gpus) {
        QVERIFY(!g.name.empty());
        QVERIFY(g.memory_bytes > 0);
        QVERIFY(g.cc_major >= 1);
      }
    }
    cuda::list_gpus(nullptr);  // the reason is optional
#endif
  }

  void versions_name_every_library() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    const QString v = QString::fromStdString(cuda::versions());
    QVERIFY2(v.startsWith("CUDA "), qPrintable(v));
    QVERIFY2(v.contains("cuDNN 9."), qPrintable(v));
    QVERIFY2(v.contains("NCCL 2."), qPrintable(v));
    if (!have_gpu()) QVERIFY2(v.contains("driver"), qPrintable(v));  // "driver X.Y" or "no NVIDIA driver"
#endif
  }

  void engine_without_gpu_is_refused() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (have_gpu()) {
      // The same refusal for an ordinal that does not exist.
      const int missing = static_cast<int>(gpus_.size());
      QVERIFY(test::expect_error<DeviceError>([&] { cuda::make_cuda_engine(missing, 8, Precision::Fp32, {}, engine_options()); },
                                              QString("cuda:%1").arg(missing)));
      return;
    }
    QVERIFY(test::expect_error<DeviceError>([&] { cuda::make_cuda_engine(0, 8, Precision::Fp32, {}, engine_options()); },
                                            {"cuda:0", QString::fromStdString(why_none_)}));
#endif
  }

  void make_engine_without_gpu_is_refused() {
    if (have_gpu()) QSKIP("this machine has a GPU");
    DeviceSpec d;
    d.kind = DeviceKind::Cuda;
    d.index = 0;
    // DeviceError (no GPU) or ConfigError (built without CUDA): never a crash.
    QVERIFY_THROWS_EXCEPTION(mb::Error, make_engine(d, Backend::Cuda, 8));
    QVERIFY_THROWS_EXCEPTION(mb::Error, make_communicators({d, d}, nullptr));
  }

  void communicators_without_gpu_are_refused() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (have_gpu()) QSKIP("this machine has a GPU");
    QVERIFY_THROWS_EXCEPTION(DeviceError, nccl_comms({0}));
    QVERIFY_THROWS_EXCEPTION(DeviceError, cuda::make_in_gpu_communicators(0, make_thread_communicators(2)));
#endif
  }

  void communicator_arguments_are_checked() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    // Checked before any device is touched, so the answer is the same with or without a GPU.
    QVERIFY_THROWS_EXCEPTION(ConfigError, cuda::make_nccl_communicators({}, {}));
    QVERIFY_THROWS_EXCEPTION(ConfigError, nccl_comms({0, 0}));
    QVERIFY_THROWS_EXCEPTION(ConfigError, cuda::make_in_gpu_communicators(0, {}));
    QVERIFY_THROWS_EXCEPTION(ConfigError, cuda::make_cuda_engine(0, 0, Precision::Fp32, {}, engine_options()));
#endif
  }

  // --- numerics on a GPU ---------------------------------------------------------------

  void nccl_all_reduce_is_exact() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    // Integers below 2^24 sum exactly in any order: every element has one right answer.
    const int ranks = std::min<int>(2, static_cast<int>(gpus_.size()));
    std::vector<int> devices(static_cast<std::size_t>(ranks));
    std::iota(devices.begin(), devices.end(), 0);
    auto comms = nccl_comms(devices);
    QCOMPARE(comms[0]->size(), ranks);
    QCOMPARE(comms[0]->name(), std::string("nccl"));
    QVERIFY(comms[0]->memory_space() == MemorySpace::CudaDevice);
    QVERIFY(comms[0]->graph_capturable());
    const std::size_t count = 100003;
    std::vector<int64_t> wrong(static_cast<std::size_t>(ranks), 0);
    on_threads(ranks, [&](int r) {
      comms[r]->connect();
      wrong[r] = all_reduce_wrong_elements(*comms[r], devices[r], ranks, count);
    });
    for (int r = 0; r < ranks; ++r) QCOMPARE(wrong[r], int64_t(0));
    if (ranks < 2)
      qInfo("one GPU: a one-rank NCCL all-reduce is a no-op (the buffer is its own sum), so this checked NCCL's "
            "initialisation and enqueue, not its reduction: that needs two GPUs");
#endif
  }

  void in_gpu_all_reduce_and_broadcast_are_exact() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    const int ranks = 3;
    auto comms = cuda::make_in_gpu_communicators(0, make_thread_communicators(ranks));
    QCOMPARE(comms[0]->name(), std::string("in-gpu (simulated)"));
    QVERIFY(comms[0]->memory_space() == MemorySpace::CudaDevice);
    QVERIFY(!comms[0]->graph_capturable());
    std::vector<int64_t> wrong(ranks, 0);
    on_threads(ranks, [&](int r) { wrong[r] = all_reduce_wrong_elements(*comms[r], 0, ranks, 4099); });
    for (int r = 0; r < ranks; ++r) QCOMPARE(wrong[r], int64_t(0));
#endif
  }

  void forward_backward_matches_reference_data() {
    QTest::addColumn<bool>("ties");
    QTest::addColumn<QString>("path");   // --cuda-path
    QTest::newRow("noise images, Keras init") << false << "cudnn";
    QTest::newRow("nonzero biases, tied conv1 channels") << true << "cudnn";
    QTest::newRow("fused path, Keras init") << false << "fused";
    QTest::newRow("fused path, nonzero biases, tied conv1 channels") << true << "fused";
  }
  void forward_backward_matches_reference() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    QFETCH(bool, ties);
    QFETCH(QString, path);
    const Dataset& train = train_;
    const Dataset& val = val_;
    const std::vector<float> params = ties ? with_biases_and_ties(init_) : init_;
    std::unique_ptr<ReplicaEngine> gpu = cuda::make_cuda_engine(0, 64, Precision::Fp32, {}, engine_options(path));
    auto ref = make_reference_engine(64);
    QVERIFY(QString::fromStdString(gpu->device_name()).startsWith("cuda:0 "));
    for (auto* e : {gpu.get(), ref.get()}) {
      e->bind_data(train, val);
      e->set_params(params);
    }
    const auto idx = batch_indices(64, 1, train.count);
    const float scale = 1.0f / 64;
    const BatchStats g = gpu->forward_backward(idx, scale), r = ref->forward_backward(idx, scale);
    QCOMPARE(g.samples, int64_t(64));
    QVERIFY2(within(g.loss_sum, r.loss_sum, {1e-4, 1e-4}),
             qPrintable(QString("loss sum %1 vs %2").arg(g.loss_sum, 0, 'g', 10).arg(r.loss_sum, 0, 'g', 10)));
    QVERIFY2(std::abs(g.correct - r.correct) <= 1, qPrintable(QString("correct %1 vs %2").arg(g.correct).arg(r.correct)));

    std::vector<float> gg(cnn::kReferenceParams), rg(cnn::kReferenceParams);
    gpu->get_grads(gg);
    ref->get_grads(rg);
    // FP32 sums of up to 64 x 676 terms in a different order (cuDNN vs plain loops): agree
    // to 0.05 % of each tensor's scale; a layout or indexing bug is off by 100 %.
    verify_tensors(gg, rg, 5e-4, 5e-3, "gradient");

    // Evaluation over two chunks (64 + 36) of the validation set.
    std::vector<int32_t> vidx(static_cast<std::size_t>(val.count));
    std::iota(vidx.begin(), vidx.end(), 0);
    const BatchStats ge = gpu->evaluate(vidx), re = ref->evaluate(vidx);
    QCOMPARE(ge.samples, val.count);
    QVERIFY(within(ge.loss_sum, re.loss_sum, {1e-4, 1e-4}));
    QVERIFY(std::abs(ge.correct - re.correct) <= 1);
    const BatchStats gt = gpu->evaluate_train(idx);
    QVERIFY(within(gt.loss_sum, g.loss_sum, {1e-5, 1e-5}));  // same samples, same weights

    // An empty batch gives zero gradients; a bad index is refused before reaching the GPU.
    const BatchStats empty = gpu->forward_backward({}, scale);
    QCOMPARE(empty.samples, int64_t(0));
    gpu->get_grads(gg);
    QCOMPARE(max_abs(gg), 0.0);
    const int32_t bad[] = {0, static_cast<int32_t>(train.count)};
    QVERIFY_THROWS_EXCEPTION(ConfigError, gpu->forward_backward(bad, scale));
    // More samples than the engine's batch: chunks (64 + 36) with summed gradients, like the
    // CPU engines; the training step itself refuses.
    const auto big = batch_indices(100, 3, train.count);
    const BatchStats gb = gpu->forward_backward(big, 1.0f / 100), rb = ref->forward_backward(big, 1.0f / 100);
    QCOMPARE(gb.samples, int64_t(100));
    QVERIFY(within(gb.loss_sum, rb.loss_sum, {1e-4, 1e-4}));
    gpu->get_grads(gg);
    ref->get_grads(rg);
    verify_tensors(gg, rg, 5e-4, 5e-3, "chunked gradient");
    {
      auto one = nccl_comms({0});
      PhaseTimes t;
      QVERIFY_THROWS_EXCEPTION(ConfigError, gpu->train_step(step_of(big, 1), *one[0], AdamConfig{}, t));
    }
    // A label that is no class is refused when the data is bound, as the reference does.
    Dataset bad_labels = train_;
    bad_labels.labels[5] = 10;
    QVERIFY_THROWS_EXCEPTION(DataError, gpu->bind_data(bad_labels, val_));
#endif
  }

  void adam_kernel_matches_reference_update() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    // The same gradients written into both engines' buffers: the fused kernel alone against
    // adam_update_reference. It rounds every operation as the reference does, so only a host
    // compiler that contracts to FMA could make them differ, by float rounding; a wrong
    // formula (epsilon placement, bias correction, beta on the wrong term) differs by far more.
    auto gpu = cuda::make_cuda_engine(0, 8, Precision::Fp32, {}, engine_options());
    gpu->set_params(init_);
    std::vector<float> w = init_, m(cnn::kReferenceParams, 0.0f), v(cnn::kReferenceParams, 0.0f), g(cnn::kReferenceParams);
    AdamConfig cfg;
    cfg.lr = 3e-3f;
    for (int step = 1; step <= 3; ++step) {
      for (std::size_t i = 0; i < g.size(); ++i) {
        const int k = static_cast<int>((i * 2654435761u + std::size_t(step) * 97) % 2001) - 1000;  // -1000..1000
        g[i] = (i % 97 == 0) ? 0.0f : float(k) * (i % 2 ? 1e-6f : 1e-3f);
      }
      cuda::copy_to_device(0, gpu->grad_buffer(), g);
      gpu->apply_adam(cfg, step);
      adam_update_reference(cfg, step, w, g, m, v);
    }
    std::vector<float> got(cnn::kReferenceParams);
    gpu->get_params(got);
    const WorstElement worst = worst_element(got, w, {1e-7, 1e-6});
    QVERIFY2(worst.ratio <= 1.0, qPrintable(QString("parameter %1: cuda %2 vs reference %3")
                                                .arg(worst.index)
                                                .arg(worst.x, 0, 'g', 9)
                                                .arg(worst.ref, 0, 'g', 9)));
#endif
  }

  void adam_matches_reference() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    auto gpu = cuda::make_cuda_engine(0, 32, Precision::Fp32, {}, engine_options());
    auto ref = make_reference_engine(32);
    for (auto* e : {gpu.get(), ref.get()}) {
      e->bind_data(train_, val_);
      e->set_params(init_);
    }
    AdamConfig cfg;
    std::vector<float> gp(cnn::kReferenceParams), rp(cnn::kReferenceParams);
    for (int step = 1; step <= 3; ++step) {
      const auto idx = batch_indices(32, step, train_.count);
      gpu->forward_backward(idx, 1.0f / 32);
      ref->forward_backward(idx, 1.0f / 32);
      gpu->apply_adam(cfg, step);
      ref->apply_adam(cfg, step);
    }
    gpu->get_params(gp);
    ref->get_params(rp);
    verify_adam_params(gp, rp, cfg, 3);
#endif
  }

  void train_step_matches_reference_data() {
    QTest::addColumn<bool>("graphs");
    QTest::addColumn<bool>("epoch_order");   // indices from begin_epoch's order on the device
    QTest::addColumn<QString>("path");       // --cuda-path
    QTest::newRow("cuda graphs, staged indices") << true << false << "cudnn";
    QTest::newRow("cuda graphs, epoch order on the device") << true << true << "cudnn";
    QTest::newRow("eager (--no-cuda-graphs)") << false << true << "cudnn";
    QTest::newRow("fused path, cuda graphs, epoch order") << true << true << "fused";
    QTest::newRow("fused path, eager") << false << false << "fused";
  }
  void train_step_matches_reference() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    QFETCH(bool, graphs);
    QFETCH(bool, epoch_order);
    QFETCH(QString, path);
    auto comm = nccl_comms({0});   // before the engine: it must outlive it
    comm[0]->connect();            // one NCCL rank: initialised, captured and destroyed like many (no data moves)
    std::unique_ptr<ReplicaEngine> gpu = cuda::make_cuda_engine(0, 32, Precision::Fp32, {}, engine_options(path, graphs));
    auto ref = make_reference_engine(32);
    for (auto* e : {gpu.get(), ref.get()}) {
      e->bind_data(train_, val_);
      e->set_params(init_);
    }
    // Both shapes prepared (graphs captured and replayed once); the state must not move.
    const ReplicaEngine::StepShape shapes[] = {{32, 32}, {20, 20}};
    gpu->warm_up(shapes, *comm[0]);
    std::vector<float> after(cnn::kReferenceParams);
    gpu->get_params(after);
    QVERIFY2(std::memcmp(after.data(), init_.data(), cnn::kReferenceParams * sizeof(float)) == 0,
             "warm_up changed the parameters");
    QCOMPARE(gpu->take_train_stats().samples, int64_t(0));
    // Profiled like any communicator; with one rank NCCL's all-reduce is a no-op, so this
    // measured its launch, not a transfer.
    QVERIFY(gpu->comm_profile().measured());
    QCOMPARE(gpu->comm_profile().replicas, 1);
    QVERIFY(gpu->steps_per_report() > 1);       // the GPU runs ahead of the host
    // Graphs proven: the standard shape (and the partial one) replay captured graphs, found
    // by the capture itself; eager when disabled. The record would say the same.
    const EngineReport report = gpu->engine_report();
    QCOMPARE(QString::fromStdString(report.path), path);
    if (graphs) {
      QCOMPARE(report.graph_batches, (std::vector<int64_t>{32, 20}));
      QVERIFY(report.eager_batches.empty());
      QVERIFY(report.nodes.kernel > 0);
      if (path == "fused") QVERIFY2(report.nodes.total() <= 12, qPrintable(QString::number(report.nodes.total())));
    } else {
      QVERIFY(report.graph_batches.empty());
      QCOMPARE(report.eager_batches, (std::vector<int64_t>{32, 20}));
    }
    AdamConfig cfg;
    PhaseTimes timing;
    // Batch 32 three times (replays of the first graph), batch 20 twice (the second), and 32
    // again. The sizes sum to 168: one epoch order of the 256 samples covers them.
    const int sizes[] = {32, 32, 32, 20, 20, 32};
    std::vector<int32_t> order(static_cast<std::size_t>(train_.count));
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = int32_t((i * 37 + 11) % order.size());
    if (epoch_order) gpu->begin_epoch(order);
    std::vector<float> gg(cnn::kReferenceParams), rg(cnn::kReferenceParams);
    int step = 0;
    int64_t offset = 0;
    for (int n : sizes) {
      ++step;
      const std::vector<int32_t> idx =
          epoch_order ? std::vector<int32_t>(order.begin() + offset, order.begin() + offset + n)
                      : batch_indices(n, step, train_.count);
      const float scale = 1.0f / float(n);
      TrainStep st = step_of(epoch_order ? std::span<const int32_t>(order.data() + offset, std::size_t(n))
                                         : std::span<const int32_t>(idx),
                             step);
      st.order_offset = offset;
      offset += n;
      gpu->train_step(st, *comm[0], cfg, timing);
      const BatchStats g = gpu->take_train_stats();
      const BatchStats r = ref->forward_backward(idx, scale);
      // This step's gradients, before the reference's Adam: a replayed graph that read stale
      // indices or scalars gives another batch's gradient, off by far more than this.
      gpu->get_grads(gg);
      ref->get_grads(rg);
      verify_tensors(gg, rg, 2e-3, 2e-2, qPrintable(QString("step %1 gradient").arg(step)));
      ref->apply_adam(cfg, step);
      QCOMPARE(g.samples, int64_t(n));
      QVERIFY2(within(g.loss_sum, r.loss_sum, {1e-4, 1e-3}),
               qPrintable(QString("step %1: loss sum %2 vs %3").arg(step).arg(g.loss_sum, 0, 'g', 10).arg(r.loss_sum, 0, 'g', 10)));
      QVERIFY(std::abs(g.correct - r.correct) <= 1);
    }
    std::vector<float> gp(cnn::kReferenceParams), rp(cnn::kReferenceParams);
    gpu->get_params(gp);
    ref->get_params(rp);
    verify_adam_params(gp, rp, cfg, step);
    // Every step counted where it ran: all six replayed a graph, or all six ran eagerly.
    const EngineReport after_steps = gpu->engine_report();
    QCOMPARE(after_steps.graph_steps, int64_t(graphs ? 6 : 0));
    QCOMPARE(after_steps.eager_steps, int64_t(graphs ? 0 : 6));
    gpu.reset();  // engines before communicators, as the trainer does
#endif
  }

  void tf32_stays_close_to_the_reference() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    // TF32 rounds the convolutions' and GEMMs' inputs to 10-bit mantissas (FP32 accumulation):
    // about 1e-3 relative per product, so the gradients agree to a few percent of each
    // tensor's scale; a layout or precision-mode bug is off by far more.
    auto gpu = cuda::make_cuda_engine(0, 64, Precision::Tf32, {}, engine_options());
    auto ref = make_reference_engine(64);
    for (auto* e : {gpu.get(), ref.get()}) {
      e->bind_data(train_, val_);
      e->set_params(init_);
    }
    const auto idx = batch_indices(64, 4, train_.count);
    const BatchStats g = gpu->forward_backward(idx, 1.0f / 64), r = ref->forward_backward(idx, 1.0f / 64);
    QVERIFY2(within(g.loss_sum, r.loss_sum, {1e-2, 1e-2}),
             qPrintable(QString("loss sum %1 vs %2").arg(g.loss_sum).arg(r.loss_sum)));
    std::vector<float> gg(cnn::kReferenceParams), rg(cnn::kReferenceParams);
    gpu->get_grads(gg);
    ref->get_grads(rg);
    verify_tensors(gg, rg, 3e-2, 5e-2, "tf32 gradient");
#endif
  }

  void fp32_algorithms_never_use_tensor_ops_data() {
    QTest::addColumn<bool>("tf32");
    QTest::newRow("fp32") << false;
    QTest::newRow("tf32") << true;
  }
  void fp32_algorithms_never_use_tensor_ops() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    QFETCH(bool, tf32);
    // The warm-up measures every pass's candidates and records the choice; in FP32 no
    // choice may run on tensor cores (TF32 would leave the reference's tolerance).
    auto comm = nccl_comms({0});
    comm[0]->connect();
    auto gpu = cuda::make_cuda_engine(0, 64, tf32 ? Precision::Tf32 : Precision::Fp32, {}, engine_options());
    gpu->bind_data(train_, val_);
    gpu->set_params(init_);
    const ReplicaEngine::StepShape shape[] = {{64, 64}};
    gpu->warm_up(shape, *comm[0]);
    const EngineReport report = gpu->engine_report();
    QCOMPARE(report.conv.size(), std::size_t(5));   // five library passes at batch 64
    for (const ConvChoice& c : report.conv) {
      qInfo("%s: %s, %s math, %lld B workspace, %s, %.1f us", c.pass.c_str(), c.algo_name.c_str(), c.math.c_str(),
            static_cast<long long>(c.workspace_bytes), c.chosen_by.c_str(), c.time_us);
      QCOMPARE(c.batch, int64_t(64));
      QVERIFY2(c.chosen_by == "measured", c.chosen_by.c_str());
      if (!tf32) QVERIFY2(c.math == "fma" || c.math == "default", c.math.c_str());
    }
    gpu.reset();
#endif
  }

  void a_run_records_how_its_steps_ran_data() {
    QTest::addColumn<QString>("devices");
    QTest::addColumn<bool>("graphs");
    QTest::addColumn<bool>("as_graphs");   // every step replays a graph (else every step is eager)
    QTest::newRow("cuda:0, graphs") << "cuda:0" << true << true;
    QTest::newRow("cuda:0, --no-cuda-graphs") << "cuda:0" << false << false;
    QTest::newRow("cuda:0,cuda:0 (in-gpu: not capturable)") << "cuda:0,cuda:0" << true << false;
  }
  void a_run_records_how_its_steps_ran() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    QFETCH(QString, devices);
    QFETCH(bool, graphs);
    QFETCH(bool, as_graphs);
    // 1000 samples at batch 64: 15 full steps and a last one of 40 per epoch, both shapes
    // warmed up (and captured): 32 steps in 2 epochs, each counted once in the record.
    auto data = test::make_synthetic_split(1000, 64);
    TrainConfig c;
    c.engine = engine_options("cudnn", graphs);
    c.devices = parse_devices(devices.toStdString());
    c.batch = 64;
    c.epochs = 2;
    MirroredTrainer t(c, data);
    RunRecord r;
    test::finishes_within(60, [&] { r = t.run(); });
    QVERIFY2(r.status == RunStatus::Completed, r.error.c_str());
    qInfo("communicator %s: %lld step(s) replayed a graph, %lld eager", r.config.communicator.c_str(),
          static_cast<long long>(r.engine.graph_steps), static_cast<long long>(r.engine.eager_steps));
    QCOMPARE(r.engine.graph_steps + r.engine.eager_steps, int64_t(32));
    QCOMPARE(r.engine.graph_steps, int64_t(as_graphs ? 32 : 0));
    if (as_graphs) QCOMPARE(r.engine.graph_batches, (std::vector<int64_t>{64, 40}));
#endif
  }

  void injected_faults_end_a_run_data() {
    QTest::addColumn<QString>("fault");     // --inject-fault
    QTest::addColumn<QString>("devices");
    QTest::addColumn<QString>("expected");
    QTest::newRow("device stall, one NCCL rank") << "stall:5" << "cuda:0" << "has not finished within";
    QTest::newRow("abort mid-step, one NCCL rank") << "abort:5" << "cuda:0" << "injected abort";
    QTest::newRow("abort on replica 1, in-gpu") << "abort:5:1" << "cuda:0,cuda:0" << "injected abort";
  }
  void injected_faults_end_a_run() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    QFETCH(QString, fault);
    QFETCH(QString, devices);
    QFETCH(QString, expected);
    // A stalled device ends the run at --timeout (2 s here) through the polled wait, then
    // drains (the stall is released); an abort in the middle of a step ends it at once.
    auto data = test::make_synthetic_split(1024, 64);
    TrainConfig c;
    c.engine = engine_options("cudnn", true, fault);
    c.devices = parse_devices(devices.toStdString());
    c.batch = 64;
    c.epochs = 2;
    c.timeout_s = 2;
    MirroredTrainer t(c, data);
    RunRecord r;
    test::finishes_within(30, [&] { r = t.run(); });
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(r.error).contains(expected), r.error.c_str());
#endif
  }

  void injected_failure_ends_a_gpu_run_data() {
    QTest::addColumn<QString>("devices");
    QTest::addColumn<int>("gpus_needed");
    QTest::newRow("cuda:0,cuda:0 (in-gpu)") << "cuda:0,cuda:0" << 1;
    QTest::newRow("cuda:0,cuda:1 (nccl)") << "cuda:0,cuda:1" << 2;
  }
  void injected_failure_ends_a_gpu_run() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    QFETCH(QString, devices);
    QFETCH(int, gpus_needed);
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    if (int(gpus_.size()) < gpus_needed)
      QSKIP(qPrintable(QString("needs %1 GPUs, this machine has %2").arg(gpus_needed).arg(gpus_.size())));
    // Replica 1 throws in its step 5 before enqueueing anything: with NCCL, replica 0's GPU
    // then spins in an all-reduce that replica 1 never joins. The run must end with replica
    // 1's message within the target's 10 s, not hang in a wait, a destructor or NCCL.
    auto data = test::make_synthetic_split(1024, 64);
    TrainConfig c;
    c.engine = engine_options();
    c.devices = parse_devices(devices.toStdString());
    c.batch = 64;
    c.epochs = 2;
    MirroredTrainer t(c, data);
    t.set_engine_factory([](const DeviceSpec& d, int max_batch) -> std::unique_ptr<ReplicaEngine> {
      return std::make_unique<FailingEngine>(cuda::make_cuda_engine(d.index, max_batch, Precision::Fp32, {}, engine_options()), 1, 5);
    });
    RunRecord r;
    test::finishes_within(10, [&] { r = t.run(); });
    QCOMPARE(r.status, RunStatus::Failed);
    QVERIFY2(QString::fromStdString(r.error).contains("injected failure"), r.error.c_str());
#endif
  }

  void nccl_abort_releases_a_waiting_gpu() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    if (gpus_.size() < 2) QSKIP("needs 2 GPUs for NCCL between two ranks");
    // Rank 0 enqueues a step (its all-reduces wait for rank 1) and waits for its statistics;
    // rank 1 fails instead (abort). Rank 0's wait must end, and everything close.
    auto comms = nccl_comms({0, 1});
    std::vector<std::unique_ptr<ReplicaEngine>> engines;
    for (int d = 0; d < 2; ++d) engines.push_back(cuda::make_cuda_engine(d, 32, Precision::Fp32, {}, engine_options()));
    const ReplicaEngine::StepShape shape[] = {{32, 64}};
    on_threads(2, [&](int r) {
      comms[r]->connect();
      engines[r]->bind_data(train_, val_);
      engines[r]->set_params(init_);
      engines[r]->warm_up(shape, *comms[r]);
    });
    bool released = false;
    test::finishes_within(10, [&] {
      std::thread peer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        comms[1]->abort("rank 1 failed (injected)");
      });
      try {
        const auto idx = batch_indices(32, 1, train_.count);
        PhaseTimes t;
        engines[0]->train_step(step_of(idx, 1, 64), *comms[0], AdamConfig{}, t);
        engines[0]->take_train_stats();
      } catch (const BarrierAborted&) {
        released = true;
      }
      peer.join();
      engines.clear();
      comms.clear();
    });
    QVERIFY(released);
#endif
  }

  void two_replicas_on_one_gpu_match_one_replica() {
#ifndef MB_HAVE_CUDA
    QSKIP("built without CUDA");
#else
    if (!have_gpu()) QSKIP(qPrintable(QString("no CUDA GPU: %1").arg(why_none_.c_str())));
    const int ranks = 2, global = 64;
    auto comm = cuda::make_in_gpu_communicators(0, make_thread_communicators(ranks));
    auto one = nccl_comms({0});
    one[0]->connect();
    std::vector<std::unique_ptr<ReplicaEngine>> replicas;
    for (int r = 0; r < ranks; ++r) replicas.push_back(cuda::make_cuda_engine(0, global / ranks, Precision::Fp32, {}, engine_options()));
    auto single = cuda::make_cuda_engine(0, global, Precision::Fp32, {}, engine_options());
    for (auto* e : {replicas[0].get(), replicas[1].get(), single.get()}) {
      e->bind_data(train_, val_);
      e->set_params(init_);
    }

    const int per = global / ranks;
    // Collective warm-up (eager on this communicator: its rendezvous is on the host), which
    // also measures the all-reduce; the state must not move.
    on_threads(ranks, [&](int r) {
      const ReplicaEngine::StepShape shape[] = {{per, global}};
      replicas[r]->warm_up(shape, *comm[r]);
    });
    const CommProfile prof = replicas[0]->comm_profile();
    QCOMPARE(prof.replicas, ranks);
    QCOMPARE(prof.bytes, int64_t(cnn::kReferenceParams * sizeof(float)));
    QVERIFY(prof.allreduce_s > 0 && prof.algbw_gbs > 0 && prof.step_s > 0 && prof.step_no_comm_s > 0);
    QVERIFY(prof.exposed_s >= 0);
    std::vector<float> after(cnn::kReferenceParams);
    replicas[1]->get_params(after);
    QVERIFY(std::memcmp(after.data(), init_.data(), cnn::kReferenceParams * sizeof(float)) == 0);

    AdamConfig cfg;
    std::vector<PhaseTimes> timing(ranks);
    PhaseTimes single_timing;
    std::vector<float> g0(cnn::kReferenceParams), g1(cnn::kReferenceParams), gs(cnn::kReferenceParams);
    // Steps 1-4 split 64 samples evenly; in steps 5 and 6 one replica has none (the last
    // partial batch of an epoch) and must still contribute zeros to the all-reduce.
    const int steps = 6;
    for (int step = 1; step <= steps; ++step) {
      const int total = step <= 4 ? global : per;
      const auto idx = batch_indices(total, step, train_.count);
      auto share = [&](int r) -> std::span<const int32_t> {
        if (step <= 4) return {idx.data() + r * per, std::size_t(per)};
        const int owner = step == 5 ? 0 : 1;
        return r == owner ? std::span<const int32_t>(idx) : std::span<const int32_t>();
      };
      std::vector<BatchStats> stats(ranks);
      on_threads(ranks, [&](int r) {
        replicas[r]->train_step(step_of(share(r), step, total), *comm[r], cfg, timing[r]);
        stats[r] = replicas[r]->take_train_stats();
      });
      single->train_step(step_of(idx, step), *one[0], cfg, single_timing);
      const BatchStats s = single->take_train_stats();
      QCOMPARE(stats[0].samples + stats[1].samples, int64_t(total));
      QVERIFY(within(stats[0].loss_sum + stats[1].loss_sum, s.loss_sum, {1e-4, 1e-4}));
      QVERIFY(std::abs(stats[0].correct + stats[1].correct - s.correct) <= 1);
      // Every rank holds the same summed gradient, and it is the whole batch's gradient.
      replicas[0]->get_grads(g0);
      replicas[1]->get_grads(g1);
      single->get_grads(gs);
      QVERIFY2(std::memcmp(g0.data(), g1.data(), cnn::kReferenceParams * sizeof(float)) == 0,
               qPrintable(QString("step %1: the ranks' all-reduced gradients differ").arg(step)));
      verify_tensors(g0, gs, 2e-3, 2e-2, qPrintable(QString("step %1 summed gradient").arg(step)));
    }
    std::vector<std::vector<float>> p(ranks, std::vector<float>(cnn::kReferenceParams));
    for (int r = 0; r < ranks; ++r) replicas[r]->get_params(p[r]);
    // Identical summed gradients and identical Adam: replicas agree bit for bit.
    QVERIFY(std::memcmp(p[0].data(), p[1].data(), cnn::kReferenceParams * sizeof(float)) == 0);
    std::vector<float> sp(cnn::kReferenceParams);
    single->get_params(sp);
    verify_adam_params(p[0], sp, cfg, steps);
    // Each step adds the exposed communication the warm-up measured.
    QVERIFY(std::fabs(timing[0][phase::AllReduce] - steps * prof.exposed_s) <= 1e-12 + 1e-9 * steps * prof.exposed_s);
    // Destroy in the trainer's order: engines (and their graphs) before communicators.
    replicas.clear();
    single.reset();
    one.clear();
    comm.clear();
#endif
  }

 private:
#ifdef MB_HAVE_CUDA
  // Rank-dependent integers below 2^24: their sums are exact in any order, so every
  // element has exactly one right answer (nccl-tests style); returns the wrong ones.
  static float pattern(std::size_t i, int rank) { return float((i * 31 + std::size_t(rank) * 7) % 1024); }

  static int64_t all_reduce_wrong_elements(Communicator& comm, int device, int ranks, std::size_t count) {
    cuda::DeviceFloats buf(device, count);
    std::vector<float> host(count);
    for (std::size_t i = 0; i < count; ++i) host[i] = pattern(i, comm.rank());
    buf.upload(host);   // synchronous: the communicator's stream sees the values
    comm.all_reduce_sum(buf.data(), count);
    cuda::synchronize_stream(device, comm.stream());
    const std::vector<float> out = buf.download();
    int64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < ranks; ++r) want += pattern(i, r);
      if (out[i] != want) ++wrong;
    }
    return wrong;
  }

  // Adam's first steps are ill-conditioned where a gradient is ~0: the update is about
  // lr * sign(g), so rounding can flip it. Allow up to 0.1 % of the parameters to differ by
  // at most a few step sizes; everything else must agree to 2 % of one step (lr = 1e-3).
  // A wrong update or gradient moves most parameters by about a step.
  static void verify_adam_params(const std::vector<float>& got, const std::vector<float>& want, const AdamConfig& cfg,
                                 int steps) {
    const double bound = 2.5 * steps * cfg.lr;
    int64_t loose = 0;
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double d = std::fabs(double(got[i]) - double(want[i]));
      if (!(d <= 2e-5 + 1e-4 * std::fabs(double(want[i])))) ++loose;
      if (!(d <= worst)) worst = d, worst_at = i;
    }
    QVERIFY2(worst <= bound, qPrintable(QString("parameter %1: cuda %2 vs reference %3")
                                            .arg(worst_at)
                                            .arg(double(got[worst_at]), 0, 'g', 9)
                                            .arg(double(want[worst_at]), 0, 'g', 9)));
    QVERIFY2(loose <= int64_t(want.size() / 1000),
             qPrintable(QString("%1 parameters differ beyond 2e-5 + 1e-4 |w| (worst %2 at %3)")
                            .arg(loose)
                            .arg(worst, 0, 'g', 3)
                            .arg(worst_at)));
  }
#endif
};

QTEST_GUILESS_MAIN(TestCuda)
#include "test_cuda.moc"

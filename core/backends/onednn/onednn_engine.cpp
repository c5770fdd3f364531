// The fast CPU replica engine: a cached plan per batch size (step_plan.h), the
// replica's flat parameters/gradients/Adam moments, and the small loops oneDNN lacks.
#include "backends/onednn/onednn_engine.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/host_engine.h"
#include "backends/onednn/adam_kernel.h"
#include "backends/onednn/pixel_scale.h"
#include "backends/onednn/step_plan.h"
#include "backends/onednn/simd_target.h"
#include "optim/adam.h"
#include "util/error.h"

namespace mb {
namespace {

// The Debian oneDNN uses OpenMP, whose thread count is a per-thread setting: every public
// entry point sets the engine's count for the calling (replica) thread, so N replicas on N
// std::threads use N x threads cores and never more. Primitive creation also reads it (kernels
// are blocked for the thread count), hence the same call before building a plan.
void use_threads(int threads) {
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
}

// Softmax cross-entropy over n rows of `classes` logits. Adds the loss and the hits to `stats`;
// with `grad`, writes (softmax - onehot) * scale: grad_scale folded in here scales every
// gradient downstream for free.
void softmax_xent(const float* logits, int classes, const std::vector<int>& labels, int n, BatchStats& stats,
                  float* grad, float scale) {
  const int C = classes;
  std::vector<double> e(std::size_t(C), 0.0);
  for (int i = 0; i < n; ++i) {
    const float* z = logits + std::size_t(i) * C;
    int arg = 0;
    for (int c = 1; c < C; ++c)
      if (z[c] > z[arg]) arg = c;
    const double zmax = z[arg];
    double sum = 0.0;
    for (int c = 0; c < C; ++c) sum += (e[c] = std::exp(double(z[c]) - zmax));
    const int y = labels[i];
    stats.loss_sum += std::log(sum) + zmax - double(z[y]);
    stats.correct += arg == y ? 1 : 0;
    if (grad) {
      float* g = grad + std::size_t(i) * C;
      for (int c = 0; c < C; ++c) g[c] = static_cast<float>((e[c] / sum - (c == y ? 1.0 : 0.0)) * scale);
    }
  }
  stats.samples += n;
}

class OnednnEngine final : public HostEngine {
 public:
  OnednnEngine(int max_batch, int threads, const ModelSpec& model, Conv2Kernel conv2)
      : HostEngine(model, "oneDNN engine"), max_batch_(max_batch), threads_(threads), conv2_(conv2) {
    MB_CHECK(max_batch >= 1, ConfigError, "oneDNN engine: max batch {} must be at least 1", max_batch);
    MB_CHECK(threads >= 1, ConfigError, "oneDNN engine: {} threads per replica; it needs at least 1", threads);
    use_threads(threads_);
    guarded("engine creation", [&] {
      engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
      stream_ = dnnl::stream(engine_);
    });
  }

  std::string device_name() const override { return "cpu (oneDNN)"; }

  void set_params(std::span<const float> params) override {
    HostEngine::set_params(params);
    ++params_version_;   // the plans reorder the new weights before their next step
  }

  BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) override {
    use_threads(threads_);
    bound(train_, "forward_backward");
    if (indices.empty()) {
      std::fill(grads_.begin(), grads_.end(), 0.0f);
      return {};
    }
    if (indices.size() <= std::size_t(max_batch_)) return forward_backward_chunk(indices, grad_scale, times);
    // Larger than the plans: chunks of max_batch, gradients summed (the trainer never asks
    // for this; other callers may).
    grad_sum_.assign(params_.size(), 0.0f);
    BatchStats total;
    for (std::size_t begin = 0; begin < indices.size(); begin += std::size_t(max_batch_)) {
      const auto chunk = indices.subspan(begin, std::min(indices.size() - begin, std::size_t(max_batch_)));
      const BatchStats s = forward_backward_chunk(chunk, grad_scale, times);
      total.loss_sum += s.loss_sum;
      total.correct += s.correct;
      total.samples += s.samples;
      for (std::size_t i = 0; i < grads_.size(); ++i) grad_sum_[i] += grads_[i];
    }
    std::copy(grad_sum_.begin(), grad_sum_.end(), grads_.begin());
    return total;
  }

  // Every step shape's plan built (oneDNN JITs its kernels at creation: ~20 ms for a dense
  // model, which inside the first timed step was 3-4 % of an mlp epoch on cpu:2) and run once
  // on the first training images, so its buffers are touched too. Parameters, moments and
  // statistics are untouched: the gradient this leaves is overwritten by the first step.
  void warm_up(std::span<const StepShape> shapes, Communicator& comm) override {
    (void)comm;
    use_threads(threads_);
    if (!train_) return;
    for (const StepShape& shape : shapes) {
      const int64_t n = std::min<int64_t>({shape.share, max_batch_, train_->count});
      if (n < 1) continue;
      warm_indices_.resize(std::size_t(n));
      std::iota(warm_indices_.begin(), warm_indices_.end(), 0);
      forward_backward_chunk(warm_indices_, 1.0f, nullptr);
    }
  }

  void apply_adam(const AdamConfig& cfg, int64_t step) override {
    use_threads(threads_);
    // Deterministic and bit-identical to the reference loop: replicas holding equal
    // gradients stay bit-identical.
    onednn::adam_update(cfg, step, params_, grads_, m_, v_);
    ++params_version_;
  }

  BatchStats evaluate(std::span<const int32_t> indices) override { return forward_only(bound(val_, "evaluate"), indices); }

  BatchStats evaluate_train(std::span<const int32_t> indices) override {
    return forward_only(bound(train_, "evaluate_train"), indices);
  }

 private:
  template <typename F>
  static void guarded(const char* what, F&& body) {
    try {
      body();
    } catch (const dnnl::error& e) {
      throw DeviceError(fmt::format("oneDNN {} failed: {} (status {})", what, e.what(), int(e.status)));
    }
  }

  BatchStats forward_backward_chunk(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) {
    const int n = static_cast<int>(indices.size());
    BatchStats stats;
    guarded("forward/backward", [&] {
      const auto t0 = Clock::now();
      onednn::StepPlan& p = plan(n);
      gather(*train_, indices, p.input());
      p.sync_weights(stream_, params_version_);
      p.forward(stream_, true, SampleKeys{indices, dropout_key_});
      softmax_xent(p.logits(), model_.classes(), labels_, n, stats, p.logits_grad(), grad_scale);
      const auto t1 = Clock::now();
      p.backward(stream_);
      if (times) {
        (*times)[phase::Forward] += std::chrono::duration<double>(t1 - t0).count();
        (*times)[phase::Backward] += std::chrono::duration<double>(Clock::now() - t1).count();
      }
    });
    return stats;
  }

  onednn::StepPlan& plan(int n) {
    auto it = plans_.find(n);
    if (it == plans_.end()) {
      it = plans_.emplace(n, onednn::make_step_plan(engine_, n, model_, params_.data(), grads_.data(), conv2_)).first;
      it->second->gradient_ready = [this](std::size_t layer) { note_gradient_ready(layer); };
      spdlog::debug("oneDNN plan for {}", it->second->describe());
    }
    return *it->second;
  }

  // uint8 images -> float/255 straight into the plan's input, labels on the side.
  void gather(const Dataset& data, std::span<const int32_t> indices, float* dst) {
    const int64_t pixels = data.pixels_per_image();
    labels_.resize(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) {
      const int64_t idx = indices[i];
      MB_CHECK(idx >= 0 && idx < data.count, Error, "{}: sample index {} outside 0..{}", data.name, idx,
               data.count - 1);
      const uint8_t* src = data.image(idx);
      float* out = dst + i * pixels;
      onednn::scale_pixels(src, out, static_cast<std::size_t>(pixels));
      labels_[i] = data.labels[idx];
    }
  }

  BatchStats forward_only(const Dataset& data, std::span<const int32_t> indices) {
    use_threads(threads_);
    BatchStats stats;
    guarded("evaluation", [&] {
      for (std::size_t begin = 0; begin < indices.size(); begin += std::size_t(max_batch_)) {
        const auto chunk = indices.subspan(begin, std::min(indices.size() - begin, std::size_t(max_batch_)));
        const int n = static_cast<int>(chunk.size());
        onednn::StepPlan& p = plan(n);
        gather(data, chunk, p.input());
        p.sync_weights(stream_, params_version_);
        p.forward(stream_, false, {});
        softmax_xent(p.logits(), model_.classes(), labels_, n, stats, nullptr, 0.0f);
      }
    });
    return stats;
  }

  int max_batch_;
  int threads_;
  Conv2Kernel conv2_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<float> grad_sum_;                 // for batches beyond max_batch
  std::vector<int32_t> warm_indices_;           // warm_up's batch: the first training images
  uint64_t params_version_ = 0;
  std::map<int, std::unique_ptr<onednn::StepPlan>> plans_;   // by batch size, built on first use
  std::vector<int> labels_;
};

}  // namespace

std::unique_ptr<ReplicaEngine> make_onednn_engine(int max_batch, int threads, const ModelSpec& model,
                                                  Conv2Kernel conv2) {
  return std::make_unique<OnednnEngine>(max_batch, threads, model, conv2);
}

namespace {

// oneDNN's instruction sets by name, widest first (the names of ONEDNN_MAX_CPU_ISA, lower case).
constexpr std::pair<dnnl::cpu_isa, const char*> kIsas[] = {
    {dnnl::cpu_isa::avx512_core_amx, "avx512_core_amx"}, {dnnl::cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
    {dnnl::cpu_isa::avx512_core_vnni, "avx512_core_vnni"}, {dnnl::cpu_isa::avx512_core, "avx512_core"},
    {dnnl::cpu_isa::avx2_vnni, "avx2_vnni"}, {dnnl::cpu_isa::avx2, "avx2"}, {dnnl::cpu_isa::avx, "avx"},
    {dnnl::cpu_isa::sse41, "sse41"}};

// The cap this process gave oneDNN ("": none). oneDNN takes one, before its first kernel.
std::mutex isa_mutex;
std::string isa_cap;

void cap_onednn_isa(const std::string& wanted) {
  std::lock_guard lock(isa_mutex);
  if (wanted == isa_cap) return;
  MB_CHECK(isa_cap.empty(), ConfigError,
           "--onednn-isa {}: this process already runs oneDNN capped at {}; a run with another cap needs a new process",
           wanted.empty() ? "auto" : wanted, isa_cap);
  const auto it = std::find_if(std::begin(kIsas), std::end(kIsas), [&](const auto& p) { return wanted == p.second; });
  MB_CHECK(it != std::end(kIsas), ConfigError, "--onednn-isa {}: not one of oneDNN's instruction sets", wanted);
  try {
    dnnl::set_max_cpu_isa(it->first);
  } catch (const dnnl::error&) {
    throw ConfigError(fmt::format("--onednn-isa {}: oneDNN has already chosen its kernels in this process ({}); "
                                  "give the cap to a new process",
                                  wanted, onednn_isa()));
  }
  isa_cap = wanted;
}

}  // namespace

std::span<const std::string_view> onednn_isa_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& [isa, name] : kIsas) out.push_back(name);
    return out;
  }();
  return names;
}

std::string onednn_isa() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (const auto& [bits, name] : kIsas)   // the widest whose bits are all set
    if ((isa & static_cast<unsigned>(bits)) == static_cast<unsigned>(bits)) return name;
  return "sse41";
}

void apply_cpu_kernel_options(const EngineOptions& options) {
  cap_onednn_isa(options.onednn_isa);
  if (onednn::simd_target() != options.simd_target) onednn::force_simd_target(options.simd_target);
}

std::string cpu_kernels_summary(Conv2Kernel conv2) {
  const char* conv2_name = conv2 == Conv2Kernel::Own ? "own winograd"
                           : conv2 == Conv2Kernel::Onednn ? "onednn" : "onednn direct";
  return fmt::format("Highway {}, oneDNN {}, conv2 {}", onednn::simd_target(), onednn_isa(), conv2_name);
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl::version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

}  // namespace mb

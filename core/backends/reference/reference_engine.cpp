// The reference replica engine: host vectors for parameters, gradients and Adam moments, and
// the whole-model loops of reference/layers.h run over the batch in chunks of max_batch.
#include "backends/reference/reference_engine.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/host_engine.h"
#include "backends/reference/reference_net.h"
#include "optim/adam.h"
#include "util/error.h"

namespace mb {
namespace {

class ReferenceEngine final : public HostEngine {
 public:
  ReferenceEngine(int max_batch, const ModelSpec& model)
      : HostEngine(model, "reference engine"),
        max_batch_(max_batch),
        chunk_grads_(model.param_count(), 0.0f),
        images_(static_cast<std::size_t>(max_batch) * model.input().size()),
        labels_(static_cast<std::size_t>(max_batch)),
        ws_(model) {
    ws_.reserve(max_batch);
  }

  std::string device_name() const override { return "cpu (reference)"; }

  // The reference loops compute forward and backward in one pass: all of it is "backward".
  BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) override {
    const auto t0 = Clock::now();
    BatchStats total = forward_backward_all(indices, grad_scale);
    if (times) (*times)[phase::Backward] += std::chrono::duration<double>(Clock::now() - t0).count();
    return total;
  }

  BatchStats forward_backward_all(std::span<const int32_t> indices, float grad_scale) {
    const Dataset& data = bound(train_, "forward_backward");
    if (indices.empty()) {
      std::fill(grads_.begin(), grads_.end(), 0.0f);
      return {};
    }
    BatchStats total;
    for (std::size_t begin = 0; begin < indices.size(); begin += max_batch_) {
      const auto chunk = indices.subspan(begin, std::min<std::size_t>(max_batch_, indices.size() - begin));
      const int n = gather(data, chunk);
      // The first chunk writes grads_ directly; later ones go through chunk_grads_ and are
      // added, so a batch larger than max_batch gives the gradient of the whole batch.
      float* out = begin == 0 ? grads_.data() : chunk_grads_.data();
      add(total, reference_forward_backward(params_.data(), images_.data(), labels_.data(), n, grad_scale, out, ws_,
                                            SampleKeys{chunk, dropout_key_}));
      if (begin != 0)
        for (std::size_t i = 0; i < grads_.size(); ++i) grads_[i] += chunk_grads_[i];
    }
    return total;
  }

  void apply_adam(const AdamConfig& cfg, int64_t step) override {
    adam_update_reference(cfg, step, params_, grads_, m_, v_);
  }

  BatchStats evaluate(std::span<const int32_t> indices) override {
    return forward_only(bound(val_, "evaluate"), indices);
  }

  BatchStats evaluate_train(std::span<const int32_t> indices) override {
    return forward_only(bound(train_, "evaluate_train"), indices);
  }

 private:
  static void add(BatchStats& total, const BatchStats& part) {
    total.loss_sum += part.loss_sum;
    total.correct += part.correct;
    total.samples += part.samples;
  }

  // Normalised images and labels of `chunk` into the batch buffers; returns the count.
  int gather(const Dataset& data, std::span<const int32_t> chunk) {
    for (std::size_t j = 0; j < chunk.size(); ++j) {
      const int32_t i = chunk[j];
      MB_CHECK(i >= 0 && i < data.count, Error, "sample index {} is outside dataset '{}' ({} images)", i, data.name,
               data.count);
      const std::size_t pixels = std::size_t(data.pixels_per_image());
      normalize_pixels(data.image(i), pixels, images_.data() + j * pixels);
      labels_[j] = data.labels[static_cast<std::size_t>(i)];
    }
    return static_cast<int>(chunk.size());
  }

  BatchStats forward_only(const Dataset& data, std::span<const int32_t> indices) {
    BatchStats total;
    for (std::size_t begin = 0; begin < indices.size(); begin += max_batch_) {
      const auto chunk = indices.subspan(begin, std::min<std::size_t>(max_batch_, indices.size() - begin));
      const int n = gather(data, chunk);
      add(total, reference_forward(params_.data(), images_.data(), labels_.data(), n, ws_));
    }
    return total;
  }

  const std::size_t max_batch_;
  std::vector<float> chunk_grads_;
  std::vector<float> images_;       // [max_batch, the model's input], normalised
  std::vector<uint8_t> labels_;     // [max_batch]
  ReferenceWorkspace ws_;
};

}  // namespace

std::unique_ptr<ReplicaEngine> make_reference_engine(int max_batch, const ModelSpec& model) {
  MB_CHECK(max_batch >= 1, ConfigError, "reference engine: max batch must be >= 1, got {}", max_batch);
  return std::make_unique<ReferenceEngine>(max_batch, model);
}

}  // namespace mb

// The reference replica engine: host vectors for parameters, gradients and Adam moments, and
// the whole-model loops of reference/layers.h run over the batch in chunks of max_batch.
#include "backends/reference/reference_engine.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/reference/layers.h"
#include "model/cnn_spec.h"
#include "optim/adam.h"
#include "util/error.h"

namespace mb {
namespace {

class ReferenceEngine final : public ReplicaEngine {
 public:
  ReferenceEngine(int max_batch, const ModelSpec& model)
      : max_batch_(max_batch),
        model_(model),
        params_(model.param_count(), 0.0f),
        grads_(model.param_count(), 0.0f),
        chunk_grads_(model.param_count(), 0.0f),
        m_(model.param_count(), 0.0f),
        v_(model.param_count(), 0.0f),
        images_(static_cast<std::size_t>(max_batch) * cnn::kImagePixels),
        labels_(static_cast<std::size_t>(max_batch)),
        ws_(model.hidden) {
    ws_.reserve(max_batch);
  }

  std::string device_name() const override { return "cpu (reference)"; }
  ModelSpec model() const override { return model_; }

  void bind_data(const Dataset& train, const Dataset& val) override {
    for (const Dataset* d : {&train, &val})
      MB_CHECK(d->pixels_per_image() == cnn::kImagePixels, DataError,
               "dataset '{}' has {}x{} images, the model takes {}x{}", d->name, d->rows, d->cols, cnn::kImageSide,
               cnn::kImageSide);
    train_ = &train;
    val_ = &val;
  }

  void set_params(std::span<const float> params) override {
    check_size(params.size(), "set_params");
    adam_restart(params, params_, m_, v_);
  }

  void get_params(std::span<float> params) const override {
    check_size(params.size(), "get_params");
    std::copy(params_.begin(), params_.end(), params.begin());
  }

  // The reference loops compute forward and backward in one pass: all of it is "backward".
  BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) override {
    const auto t0 = Clock::now();
    BatchStats total = forward_backward_all(indices, grad_scale);
    if (times) times->backward_s += std::chrono::duration<double>(Clock::now() - t0).count();
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
      add(total, reference_forward_backward(params_.data(), images_.data(), labels_.data(), n, grad_scale, out,
                                            ws_));
      if (begin != 0)
        for (std::size_t i = 0; i < grads_.size(); ++i) grads_[i] += chunk_grads_[i];
    }
    return total;
  }

  float* grad_buffer() override { return grads_.data(); }

  void get_grads(std::span<float> grads) const override {
    check_size(grads.size(), "get_grads");
    std::copy(grads_.begin(), grads_.end(), grads.begin());
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

  void check_size(std::size_t size, const char* what) const {
    MB_CHECK(size == params_.size(), Error, "reference engine {}: buffer holds {} floats, the model ({}) has {}", what,
             size, model_.name(), params_.size());
  }

  static const Dataset& bound(const Dataset* data, const char* what) {
    MB_CHECK(data != nullptr, Error, "reference engine {}: no data bound (call bind_data first)", what);
    return *data;
  }

  // Normalised images and labels of `chunk` into the batch buffers; returns the count.
  int gather(const Dataset& data, std::span<const int32_t> chunk) {
    for (std::size_t j = 0; j < chunk.size(); ++j) {
      const int32_t i = chunk[j];
      MB_CHECK(i >= 0 && i < data.count, Error, "sample index {} is outside dataset '{}' ({} images)", i, data.name,
               data.count);
      normalize_pixels(data.image(i), cnn::kImagePixels, images_.data() + j * cnn::kImagePixels);
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
  const ModelSpec model_;
  std::vector<float> params_, grads_, chunk_grads_, m_, v_;
  std::vector<float> images_;       // [max_batch, 784], normalised
  std::vector<uint8_t> labels_;     // [max_batch]
  ReferenceWorkspace ws_;
  const Dataset* train_ = nullptr;
  const Dataset* val_ = nullptr;
};

}  // namespace

std::unique_ptr<ReplicaEngine> make_reference_engine(int max_batch, const ModelSpec& model) {
  MB_CHECK(max_batch >= 1, ConfigError, "reference engine: max batch must be >= 1, got {}", max_batch);
  return std::make_unique<ReferenceEngine>(max_batch, model);
}

}  // namespace mb

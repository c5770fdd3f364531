// What the two CPU engines (reference, oneDNN) hold alike: the model's parameters, gradients
// and Adam moments as host vectors (never resized: the oneDNN plans keep pointers into them),
// the data they train on, and the copies in and out. Each engine adds its forward/backward and
// its Adam loop.
#pragma once
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "backends/replica_engine.h"
#include "data/dataset.h"
#include "data/data_fit.h"
#include "model/model_spec.h"
#include "optim/adam.h"
#include "util/error.h"

namespace mb {

class HostEngine : public ReplicaEngine {
 public:
  const ModelSpec& model() const final { return model_; }

  void bind_data(const Dataset& train, const Dataset& val) final {
    for (const Dataset* d : {&train, &val}) check_data_fits(*d, model_);
    train_ = &train;
    val_ = &val;
  }

  // New weights, Adam's moments restarted (optim/adam.h).
  void set_params(std::span<const float> params) override {
    check_size(params.size(), "set_params");
    adam_restart(params, params_, m_, v_);
  }

  void get_params(std::span<float> params) const final {
    check_size(params.size(), "get_params");
    std::copy(params_.begin(), params_.end(), params.begin());
  }

  float* grad_buffer() final { return grads_.data(); }

  void get_grads(std::span<float> grads) const final {
    check_size(grads.size(), "get_grads");
    std::copy(grads_.begin(), grads_.end(), grads.begin());
  }

 protected:
  // `name` starts the engine's messages ("oneDNN engine").
  HostEngine(const ModelSpec& model, std::string name)
      : model_(model), params_(model.param_count(), 0.0f), grads_(model.param_count(), 0.0f),
        m_(model.param_count(), 0.0f), v_(model.param_count(), 0.0f), name_(std::move(name)) {}

  // The data bound for `what` (bind_data must have come first).
  const Dataset& bound(const Dataset* data, const char* what) const {
    MB_CHECK(data != nullptr, Error, "{}: bind_data() must come before {}()", name_, what);
    return *data;
  }

  const ModelSpec model_;
  std::vector<float> params_, grads_, m_, v_;
  const Dataset* train_ = nullptr;
  const Dataset* val_ = nullptr;

 private:
  void check_size(std::size_t size, const char* what) const {
    MB_CHECK(size == params_.size(), Error, "{} {}: {} floats, the model ({}) has {}", name_, what, size,
             model_.name(), params_.size());
  }

  std::string name_;
};

}  // namespace mb

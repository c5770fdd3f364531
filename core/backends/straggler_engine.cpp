// The simulated straggler (see straggler_engine.h): every call forwards to the wrapped engine;
// forward_backward then sleeps (factor - 1) times as long as it took. The extra time is the
// straggler's compute in its breakdown (counted as backward), and the other replicas' wait.
#include "backends/straggler_engine.h"

#include <thread>

#include "util/error.h"

namespace mb {
namespace {

class StragglerEngine final : public ReplicaEngine {
 public:
  StragglerEngine(std::unique_ptr<ReplicaEngine> inner, double factor) : inner_(std::move(inner)), factor_(factor) {}

  std::string device_name() const override { return inner_->device_name() + " [simulated straggler]"; }
  const ModelSpec& model() const override { return inner_->model(); }
  void bind_data(const Dataset& train, const Dataset& val) override { inner_->bind_data(train, val); }
  void set_params(std::span<const float> params) override { inner_->set_params(params); }
  void get_params(std::span<float> params) const override { inner_->get_params(params); }

  BatchStats forward_backward(std::span<const int32_t> indices, float grad_scale, PhaseTimes* times) override {
    const auto t0 = Clock::now();
    BatchStats stats = inner_->forward_backward(indices, grad_scale, times);
    const auto took = Clock::now() - t0;
    const auto extra = std::chrono::duration_cast<Clock::duration>(took * (factor_ - 1.0));
    std::this_thread::sleep_for(extra);
    if (times) (*times)[phase::Backward] += std::chrono::duration<double>(Clock::now() - t0 - took).count();
    return stats;
  }

  float* grad_buffer() override { return inner_->grad_buffer(); }
  void get_grads(std::span<float> grads) const override { inner_->get_grads(grads); }
  void apply_adam(const AdamConfig& cfg, int64_t step) override { inner_->apply_adam(cfg, step); }
  void begin_epoch(std::span<const int32_t> order) override { inner_->begin_epoch(order); }
  void warm_up(std::span<const StepShape> shapes, Communicator& comm) override { inner_->warm_up(shapes, comm); }
  // The default step (forward_backward above, then the all-reduce): the delay comes before
  // the collective, where a slow device's would.
  int steps_per_report() const override { return inner_->steps_per_report(); }
  BatchStats evaluate(std::span<const int32_t> indices) override { return inner_->evaluate(indices); }
  BatchStats evaluate_train(std::span<const int32_t> indices) override { return inner_->evaluate_train(indices); }
  void synchronize() override { inner_->synchronize(); }
  void set_dropout_key(const DropoutKey& key) override { inner_->set_dropout_key(key); }

 private:
  std::unique_ptr<ReplicaEngine> inner_;
  const double factor_;
};

}  // namespace

std::unique_ptr<ReplicaEngine> make_straggler(std::unique_ptr<ReplicaEngine> engine, double factor) {
  MB_CHECK(factor >= 1.0 && factor <= 100.0, ConfigError, "--slow-replica: the factor must be in 1..100 (got {})",
           factor);
  if (factor == 1.0) return engine;
  return std::make_unique<StragglerEngine>(std::move(engine), factor);
}

}  // namespace mb

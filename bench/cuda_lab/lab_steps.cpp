// The kernel lab: whole training steps of each path side by side, through the engine itself
// (its warm-up: measured algorithms, captured graphs; one NCCL rank, as a single-GPU run, or
// the in-GPU fallback where NCCL cannot initialise). Each path's gradients are checked
// against the reference stages, then its steps are timed as the trainer runs them (graph
// replays, no host waits between steps), and the report says how many replayed a graph. The
// part most likely to throw (NCCL, capture, plans), so cuda_lab runs it last.
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "comm/communicator.h"
#include "lab_device.h"
#include "config/train_options.h"
#include "model/cnn_spec.h"
#include "optim/adam.h"

namespace mb::lab {
namespace {

struct PathRun {
  const char* path;
  Precision precision;
};

// The trainer's steps over an epoch order after the warm-up: microseconds per step.
double time_trainer_steps(ReplicaEngine& engine, Communicator& comm, const CudnnStages& s, int steps) {
  const int n = s.n;
  std::vector<int32_t> order(std::size_t(s.data.count));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  engine.begin_epoch(order);
  AdamConfig cfg;
  PhaseTimes times;
  const int per_epoch = int(order.size()) / n;
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < steps; ++step) {
    const int at = (step % std::max(1, per_epoch)) * n;
    TrainStep ts;
    ts.indices = std::span<const int32_t>(order.data() + at, std::size_t(n));
    ts.order_offset = at;
    ts.global_batch = n;
    ts.grad_scale = 1.0f / float(n);
    ts.adam_step = step + 1;
    engine.train_step(ts, comm, cfg, times);
    if ((step + 1) % engine.steps_per_report() == 0) engine.take_train_stats();
  }
  engine.take_train_stats();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e6 / std::max(1, steps);
}

// One path's step: validated, then timed through the engine.
Result run_path(const CudnnStages& s, const LabOptions& o, const CaseSpec& spec, const PathRun& run) {
  const int n = s.n;
  Dataset val = s.data;
  auto comms = cuda::make_nccl_communicators({0}, make_thread_communicators(1));
  comms[0]->connect();
  // The run options an engine takes: the step path, and the lab's cuDNN tuning budget.
  TrainConfig options;
  set_option(train_option("cuda_path"), options, run.path);
  options.engine.cudnn_tune_s = o.tune_s;
  std::unique_ptr<ReplicaEngine> engine = cuda::make_cuda_engine(0, n, run.precision, {}, options.engine);
  engine->bind_data(s.data, val);
  engine->set_params(s.params);
  // Validation: one forward-backward on the stages' samples against their reference
  // gradients; then the timing: warm-up (untimed), then steps over an epoch order.
  auto validate = [&] {
    const BatchStats st = engine->forward_backward(s.idx, s.grad_scale);
    std::vector<float> grads(cnn::kReferenceParams);
    engine->get_grads(grads);
    const std::vector<float> want = s.grads();
    Checks checks;
    for (const auto& t : cnn::param_tensors()) {
      const std::span<const float> g(grads.data() + t.offset, t.size), w(want.data() + t.offset, t.size);
      checks.push_back({std::string(t.name) + " grad", compare(g, w, spec.tol)});
    }
    const std::vector<float> loss_got = {float(st.loss_sum)}, loss_want = {float(s.loss_sum)};
    checks.push_back({"loss", compare(loss_got, loss_want, spec.tol)});
    return checks;
  };
  auto timing = [&] {
    const ReplicaEngine::StepShape shape[] = {{n, n}};
    engine->warm_up(shape, *comms[0]);
    return time_trainer_steps(*engine, *comms[0], s, o.steps);
  };
  Result r = validate_then_time(spec, n, validate, timing, o.peak);
  const EngineReport report = engine->engine_report();
  r.detail += fmt::format(
      "; {} of {} shape(s) as graphs, {} nodes per step ({} kernels); {} step(s) replayed a graph, {} eager; "
      "{}; 469 steps = {:.1f} ms",
      report.graph_batches.size(), report.graph_batches.size() + report.eager_batches.size(), report.nodes.total(),
      report.nodes.kernel, report.graph_steps, report.eager_steps, comms[0]->name(), 469 * r.time_us / 1000);
  engine.reset();  // engines before communicators
  return r;
}

}  // namespace

std::vector<Result> run_steps(const CudnnStages& s, const LabOptions& o) {
  const int n = s.n;
  std::vector<Result> out;
  const PathRun runs[] = {{"cudnn", Precision::Fp32}, {"cudnn", Precision::Tf32}, {"fused", Precision::Fp32}};
  for (const PathRun& run : runs) {
    const auto cases = lab_cases(n, run.precision);
    const CaseSpec& spec =
        find_case(cases, std::string(run.path) == "fused" ? "train step, fused path"
                                                          : "train step, cudnn path, " + std::string(to_string(run.precision)));
    try {
      out.push_back(run_path(s, o, spec, run));
    } catch (const std::exception& e) {
      // One path's failure (a capture, a plan) leaves the others to run.
      out.push_back(error_result(Group::Step, n, spec.name, e.what()));
    }
  }
  return out;
}

}  // namespace mb::lab

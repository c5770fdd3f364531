// The plans' common timing, and the choice between them (see step_plan.h).
#include "backends/onednn/step_plan.h"

#include <time.h>

#include <algorithm>
#include <chrono>

#include "backends/onednn/layer_plan.h"
#include "backends/onednn/onednn_plan.h"

namespace mb::onednn {

double StepPlan::now() const {
  if (!profile_cpu_time_)
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void StepPlan::record(const std::string& name, double seconds) {
  auto it = std::find_if(profile_.begin(), profile_.end(), [&](const StageTime& t) { return t.name == name; });
  if (it == profile_.end()) it = profile_.insert(profile_.end(), StageTime{name});
  it->seconds += seconds;
  ++it->calls;
}

std::unique_ptr<StepPlan> make_step_plan(const dnnl::engine& engine, int batch, const ModelSpec& model,
                                         const float* params, float* grads, Conv2Kernel conv2, bool generic) {
  // The own kernels were written for the reference family's shapes: that is where they run.
  if (const auto width = reference_family_width(model); width && !generic)
    return std::make_unique<NetPlan>(engine, batch, *width, params, grads, conv2);
  return std::make_unique<LayerPlan>(engine, batch, model, params, grads);
}

}  // namespace mb::onednn

// The collective graph decision (see step_graphs.h).
#include "backends/common/step_graphs.h"

#include <algorithm>
#include <vector>

namespace mb {

std::set<int64_t> agree_on_step_graphs(std::span<const ReplicaEngine::StepShape> shapes, Communicator& comm,
                                       bool graphs_wanted, const GraphWarmUpSteps& steps) {
  for (const auto& shape : shapes) steps.eager_step(shape);
  // One all-gather even when this rank does not want graphs: the others must hear it.
  const auto wanted = comm.all_gather<int32_t>(graphs_wanted ? 1 : 0);
  std::set<int64_t> agreed, decided;
  if (std::any_of(wanted.begin(), wanted.end(), [](int32_t w) { return w == 0; })) return agreed;
  for (const auto& shape : shapes) {
    if (!decided.insert(shape.global_batch).second) continue;   // listed twice
    const bool mine = steps.capture(shape);
    const auto all = comm.all_gather<int32_t>(mine ? 1 : 0);
    if (std::all_of(all.begin(), all.end(), [](int32_t ok) { return ok != 0; })) {
      agreed.insert(shape.global_batch);
    } else if (mine) {
      steps.discard(shape);
    }
  }
  std::set<int64_t> replayed;
  for (const auto& shape : shapes)
    if (agreed.count(shape.global_batch) && replayed.insert(shape.global_batch).second) steps.replay(shape);
  return agreed;
}

}  // namespace mb

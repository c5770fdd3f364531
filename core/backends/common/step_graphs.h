// The collective decision which training-step shapes run as captured CUDA graphs. NCCL needs
// every rank to make the same captured-or-eager choice for each collective, so the choice is
// never a rank's own: it is keyed on the step's global batch (the replica count is the
// communicator's, fixed), taken in the untimed warm-up from what every rank reports, and a
// capture that fails on one rank takes that shape off the graph list on all of them. Steps
// whose global batch was not agreed on run eagerly on every rank. GPU-free: the engine gives
// the device work as callbacks, the tests give fakes.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <span>

#include "backends/replica_engine.h"
#include "comm/communicator.h"

namespace mb {

struct GraphWarmUpSteps {
  using Shape = ReplicaEngine::StepShape;
  // One eager step of the shape: builds plans, loads kernels, connects NCCL's channels
  // (nothing of which may happen under capture). Collective on the device.
  std::function<void(const Shape&)> eager_step;
  // Captures this rank's step of the shape into a graph; false (after logging why) when the
  // capture failed. Device errors that are not capture failures throw.
  std::function<bool(const Shape&)> capture;
  // Drops the graph this rank captured for the shape (others failed theirs).
  std::function<void(const Shape&)> discard;
  // One replay of the agreed graph: uploads it and runs its kernels once before the clock
  // starts. Collective on the device.
  std::function<void(const Shape&)> replay;
};

// Collective: every rank calls it with the same global batches in the same order (its own
// shares). `graphs_wanted`: this rank could use graphs (not disabled, communicator capturable);
// graphs are used only when every rank wants them. Every shape gets an eager step first.
// Returns the global batches that run as graphs, the same set on every rank.
std::set<int64_t> agree_on_step_graphs(std::span<const ReplicaEngine::StepShape> shapes, Communicator& comm,
                                       bool graphs_wanted, const GraphWarmUpSteps& steps);

}  // namespace mb

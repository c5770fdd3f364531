// A simulated straggler, for demonstrations: wraps a replica engine and makes its compute
// FACTOR times slower by idling after each forward/backward (before the all-reduce), so the
// class sees lock-step training run at the pace of the slowest device and the others' wait
// grow. Labelled "simulated straggler" wherever it shows (RunConfig::slow_replica).
#pragma once
#include <memory>

#include "backends/replica_engine.h"

namespace mb {

// factor >= 1; 1 returns the engine unchanged.
std::unique_ptr<ReplicaEngine> make_straggler(std::unique_ptr<ReplicaEngine> engine, double factor);

}  // namespace mb

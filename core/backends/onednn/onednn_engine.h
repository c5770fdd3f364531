// The fast CPU engine: oneDNN primitives, single-threaded inside one replica (one core).
#pragma once
#include <memory>
#include <string>

#include "backends/replica_engine.h"

namespace mb {

std::unique_ptr<ReplicaEngine> make_onednn_engine(int max_batch);
std::string onednn_version();   // "2.6.3"

}  // namespace mb

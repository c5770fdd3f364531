// The reference engine: plain loops over the layers in reference/layers.h. Slow, obvious,
// the ground truth every fast backend is tested against.
#pragma once
#include <memory>

#include "backends/replica_engine.h"

namespace mb {

std::unique_ptr<ReplicaEngine> make_reference_engine(int max_batch, const ModelSpec& model = {});

}  // namespace mb

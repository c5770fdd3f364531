// Registration of the core's value types for queued connections.
#include "run/metatypes.h"

namespace mb {

void register_metatypes() {
  qRegisterMetaType<mb::EpochMetrics>("mb::EpochMetrics");
  qRegisterMetaType<mb::StepProgress>("mb::StepProgress");
  qRegisterMetaType<mb::RunConfig>("mb::RunConfig");
  qRegisterMetaType<mb::RunRecord>("mb::RunRecord");
  qRegisterMetaType<mb::TrainConfig>("mb::TrainConfig");
}

}  // namespace mb

// The core's value types as Qt meta-types, so queued signals can carry them between the
// training thread and the GUI thread by value (no shared mutable state).
#pragma once
#include <QMetaType>

#include "records/run_record.h"
#include "trainer/train_observer.h"
#include "config/train_config.h"

Q_DECLARE_METATYPE(mb::EpochMetrics)
Q_DECLARE_METATYPE(mb::StepProgress)
Q_DECLARE_METATYPE(mb::RunConfig)
Q_DECLARE_METATYPE(mb::RunRecord)
Q_DECLARE_METATYPE(mb::TrainConfig)

namespace mb {

// Registers the types above with Qt's meta-type system (idempotent).
void register_metatypes();

}  // namespace mb

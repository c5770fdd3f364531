// The run record's "engine" object (util/engine_report.h) as JSON, both ways.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include "util/engine_report.h"

namespace mb {

nlohmann::json to_json(const EngineReport& report);
// Throws DataError naming the field. `with_step_counts`: the record's schema has graph_steps and
// eager_steps (5 on); older records lack them and read as not counted (-1).
EngineReport engine_report_from_json(const nlohmann::json& j, bool with_step_counts = true);

}  // namespace mb

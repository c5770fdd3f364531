// The run record's "engine" object (util/engine_report.h) as JSON, both ways.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include "util/engine_report.h"

namespace mb {

nlohmann::json to_json(const EngineReport& report);
EngineReport engine_report_from_json(const nlohmann::json& j);  // throws DataError naming the field

}  // namespace mb

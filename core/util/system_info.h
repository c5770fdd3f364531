// Facts about this program and machine that a run record needs to be comparable later.
#pragma once
#include <string>

namespace mb {

std::string version();               // program version, e.g. "0.1.0"
std::string cpu_model_name();        // from /proc/cpuinfo, "unknown CPU" if absent
int cpu_core_count();                // usable hardware threads (affinity mask)
std::string iso8601_now_utc();       // "2026-11-30T06:32:21Z"

}  // namespace mb

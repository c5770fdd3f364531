// Where the workbench keeps its run store (core/experiment/run_store.h) between launches.
#pragma once
#include <filesystem>

namespace mb {

// $MIRRORBENCH_HOME if set (tests, portable installs), else QStandardPaths::AppDataLocation
// (~/.local/share/mirrorbench/mirrorbench on Linux).
std::filesystem::path default_store_root();

}  // namespace mb

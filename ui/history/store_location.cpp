// The run store's folder, from the environment or Qt's per-user data location.
#include "history/store_location.h"

#include "experiment/run_store.h"

#include <QStandardPaths>

#include <cstdlib>

namespace mb {

std::filesystem::path default_store_root() {
  // Qt's own answer where the platform has one (the same folder on Linux as the core's, which
  // mirrorbench-cli uses, so the CLI's compare/reference/sweep see the workbench's runs).
  if (const char* home = std::getenv("MIRRORBENCH_HOME"); home && *home) return std::filesystem::path(home);
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (!dir.isEmpty()) return std::filesystem::path(dir.toStdString());
  return default_history_root();
}

}  // namespace mb

// The run store's folder, from the environment or Qt's per-user data location.
#include "history/store_location.h"

#include <QStandardPaths>

#include <cstdlib>

namespace mb {

std::filesystem::path default_store_root() {
  namespace fs = std::filesystem;
  if (const char* home = std::getenv("MIRRORBENCH_HOME"); home && *home) return fs::path(home);
  const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
  if (!dir.isEmpty()) return fs::path(dir.toStdString());
  // No writable data location (no HOME): never fall back to the working directory silently.
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".mirrorbench";
}

}  // namespace mb

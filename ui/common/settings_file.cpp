// The settings' location (see settings_file.h).
#include "common/settings_file.h"

#include <cstdlib>
#include <filesystem>

namespace mb {

std::unique_ptr<QSettings> open_settings() {
  if (const char* home = std::getenv("MIRRORBENCH_HOME"); home && *home) {
    const auto file = std::filesystem::path(home) / "settings.ini";
    return std::make_unique<QSettings>(QString::fromStdString(file.string()), QSettings::IniFormat);
  }
  return std::make_unique<QSettings>(QStringLiteral("mirrorbench"), QStringLiteral("mirrorbench"));
}

}  // namespace mb

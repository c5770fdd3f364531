// Where the workbench's settings live: an INI file in $MIRRORBENCH_HOME when it is set (tests
// never touch the user's settings), else the platform's native settings for "mirrorbench".
// One place, for app/settings.h and the few parts that keep a setting of their own.
#pragma once
#include <QSettings>

#include <memory>

namespace mb {

std::unique_ptr<QSettings> open_settings();

}  // namespace mb

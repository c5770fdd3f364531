// Log lines of a run: to spdlog and to the front end's observer.
#include "trainer/train_observer.h"

#include <spdlog/spdlog.h>

namespace mb {

void log_line(const TrainObserver& observer, LogLevel level, const std::string& line) {
  switch (level) {
    case LogLevel::Info: spdlog::info("{}", line); break;
    case LogLevel::Warning: spdlog::warn("{}", line); break;
    case LogLevel::Error: spdlog::error("{}", line); break;
  }
  if (observer.on_log) observer.on_log(level, line);
}

}  // namespace mb

// Deadlines for waits that must not last forever. A run's every wait on another rank, another
// process or its own device ends after --timeout seconds (TrainConfig::timeout_s) with a
// StallError naming what it waited for: a peer that is stuck (alive, not failed, not
// arriving) must end the run in bounded time just as a failed one does.
#pragma once
#include <chrono>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace mb {

// --timeout's default: long enough for any healthy step, warm-up phase or statistics
// exchange on a loaded machine, short enough that a stuck run ends while someone watches.
inline constexpr double kDefaultTimeoutS = 60.0;

// A wait outlived its deadline: the message names the device, replica or process that did
// not finish or arrive, and the timeout.
class StallError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `seconds` from now; infinite (or not positive) never passes.
  static Deadline after(double seconds) {
    Deadline d;
    d.seconds_ = seconds;
    if (std::isfinite(seconds) && seconds > 0)
      d.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  static Deadline never() { return after(std::numeric_limits<double>::infinity()); }

  bool finite() const { return at_ != Clock::time_point::max(); }
  bool passed() const { return finite() && Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }
  double seconds() const { return seconds_; }  // the timeout it was made with

 private:
  Clock::time_point at_ = Clock::time_point::max();
  double seconds_ = std::numeric_limits<double>::infinity();
};

}  // namespace mb

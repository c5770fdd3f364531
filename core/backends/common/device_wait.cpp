// Polling wait with failure checks and a deadline (see device_wait.h).
#include "backends/common/device_wait.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "util/deadline.h"

namespace mb {

void wait_polling(const std::function<bool()>& done, Communicator* comm, const std::function<void()>& on_failure,
                  const std::string& device) {
  const Deadline deadline = Deadline::after(comm ? comm->timeout_s() : kDefaultTimeoutS);
  for (int round = 0; !done(); ++round) {
    if (comm) {
      try {
        comm->check();
      } catch (...) {
        if (on_failure) on_failure();
        throw;
      }
    }
    // The clock is read only once the wait is long: a healthy wait never pays for it.
    if (round >= 200 && round % 64 == 0 && deadline.passed()) {
      // No on_failure here: on a stuck device the engine's release may itself block in the
      // driver, and the failure must be known (and the run ending) first; the engine releases
      // its device work when it is destroyed, on this thread (replica_threads.h).
      const std::string why = comm ? comm->describe_stall() : std::string();
      throw StallError(fmt::format("{}: its queued work has not finished within {:g} s (--timeout): the device is "
                                   "stuck, or waits in a collective for a peer that is stuck{}",
                                   device, deadline.seconds(), why.empty() ? "" : " (" + why + ")"));
    }
    // ~50 us of yielding covers a step's tail; beyond that the device is far behind (or
    // stuck), and 50 us sleeps keep the thread off the core the other replicas need.
    if (round < 200) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace mb

// Polling wait with failure checks (see device_wait.h).
#include "backends/common/device_wait.h"

#include <chrono>
#include <thread>

namespace mb {

void wait_polling(const std::function<bool()>& done, Communicator* comm, const std::function<void()>& on_failure) {
  for (int round = 0; !done(); ++round) {
    if (comm) {
      try {
        comm->check();
      } catch (...) {
        if (on_failure) on_failure();
        throw;
      }
    }
    // ~50 us of yielding covers a step's tail; beyond that the device is far behind (or
    // stuck), and 50 us sleeps keep the thread off the core the other replicas need.
    if (round < 200) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace mb

// Waiting for a device by polling instead of blocking in the driver, so that the wait can end
// when the run fails: a GPU whose step holds a collective that a failed peer will never join
// spins forever, and cudaStreamSynchronize would wait with it (the trainer's join, the
// engine's destructor and ncclCommDestroy after it). The wait also has a deadline
// (--timeout, the communicator's timeout_s()): a device that stalls, or waits in a collective
// for a peer that is stuck without failing, ends the run too. GPU-free, so it is tested with fakes.
#pragma once
#include <functional>
#include <string>

#include "comm/communicator.h"

namespace mb {

// Polls done() until it returns true (it throws for a device error). Between polls asks
// comm->check() (when comm is given), which throws once a rank failed; before that exception
// leaves, on_failure() runs (an engine releases its graphs and cancels its collectives there,
// so its device drains). After comm->timeout_s() (kDefaultTimeoutS without a communicator)
// a StallError names `device` and what comm->describe_stall() knows about the ranks that
// stopped advancing; on_failure() does not run then (on a stuck device it could block in the
// driver before the failure is known: the engine releases its work when it is destroyed).
// Spins briefly, then yields, then sleeps in short steps: a wait at a reporting tick is
// typically microseconds to milliseconds.
void wait_polling(const std::function<bool()>& done, Communicator* comm,
                  const std::function<void()>& on_failure = {}, const std::string& device = "the device");

}  // namespace mb

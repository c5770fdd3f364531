// The host communicator of CPU replicas: the replicas of one process are threads that meet
// in shared memory; with a ProcessLink the processes' leaders (local replica 0) then combine
// the per-process results over MPI. Without a link (or with one process) it is the plain
// in-process communicator ("threads").
#pragma once
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/process_link.h"

namespace mb {

// One handle per local replica, local replica l at [l]; its global rank is
// process * local_ranks + l. Every process must pass the same local_ranks (checked over the
// link; a mismatch is a ConfigError naming the hosts). Called by one thread per process
// (collective over the link when there is one). Every wait for the other local ranks ends
// after timeout_s with a StallError naming the ones that did not arrive (the link has its own).
std::vector<std::unique_ptr<Communicator>> make_process_communicators(int local_ranks,
                                                                      std::shared_ptr<ProcessLink> link,
                                                                      double timeout_s = kDefaultTimeoutS);

}  // namespace mb

// The link between the processes of a run (MPI under mpirun/srun): what one process's leader
// thread calls once the process's own replicas have combined their data. The hierarchical
// communicator (threads inside a process, this link between processes) is written against
// this interface, so it is tested in one process with a loopback link and runs on MPI
// (comm/mpi/) in production. Only the leader thread of a process calls the collectives,
// one at a time (MPI_THREAD_SERIALIZED); request_abort may come from any thread.
#pragma once
#include <cstddef>
#include <span>
#include <string>

#include "comm/wire_format.h"
#include "util/error.h"

namespace mb {

// Another process failed, died, stopped answering, or the launcher ended the run: the
// message names the process (MPI rank, host, pid) at fault.
class PeerFailure : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

// Where this process sits in the run; one process without a launcher.
struct ProcessInfo {
  int process = 0, processes = 1;               // MPI rank and size
  int local_process = 0, local_processes = 1;   // among the processes on this host
  std::string host;                             // this host's name
};

class ProcessLink {
 public:
  virtual ~ProcessLink() = default;

  virtual const ProcessInfo& info() const = 0;
  virtual std::string name() const = 0;          // "mpi"

  // Collectives over processes (leader threads). Each throws PeerFailure naming the rank and
  // host at fault when a peer fails, dies or stops answering within the link's timeout, and
  // throws BarrierAborted once request_abort() was called in this process.
  //
  // data[i] <- sum over processes, each element summed once (reduce-scatter, then all-gather),
  // so every process receives the same bits.
  virtual void all_reduce_sum(float* data, std::size_t count) = 0;
  // The same for values that `wire` carries exactly, the sums rounded to `wire` (see
  // Communicator::all_reduce_sum_as): a link that moves bytes sends 16-bit values. This
  // default exchanges FP32 and rounds: the same bits.
  virtual void all_reduce_sum_as(float* data, std::size_t count, WireDtype wire) {
    all_reduce_sum(data, count);
    round_to_wire(std::span<float>(data, count), wire);
  }
  // Whether the link tells how long its last all_reduce_sum waited for the other processes to
  // arrive (all_reduce_wait_s): then nothing needs to measure that before it. A link that
  // cannot is preceded by a barrier, which costs a round trip per step.
  virtual bool measures_all_reduce_wait() const { return false; }
  virtual double all_reduce_wait_s() const { return 0; }
  virtual void broadcast(void* data, std::size_t bytes, int root_process) = 0;
  // all[p * bytes, (p+1) * bytes) <- process p's `mine`.
  virtual void all_gather(const void* mine, std::size_t bytes, void* all) = 0;
  virtual void barrier() = 0;

  // Throws PeerFailure when another process's failure notice has arrived: for ranks that wait
  // on a device rather than in a link collective (a GPU replica between statistics exchanges).
  // Cheap (one probe); any thread.
  virtual void check() {}

  // Which other processes died, are stopped or do not answer (pings; may take seconds), or
  // empty when that cannot be told: for a rank whose device wait outlived --timeout while
  // it waited on the others through device collectives. Any thread.
  virtual std::string diagnose_peers() { return {}; }

  // This process failed: tell the other processes (so they fail with this reason instead of
  // timing out) and make collectives in progress here give up. Any thread, idempotent.
  virtual void request_abort(const std::string& reason) = 0;
};

}  // namespace mb

// The ProcessLink over MPI: non-blocking collectives on a duplicate of MPI_COMM_WORLD, waited
// for by polling, so that a wait can end on a deadline, on a signal from the launcher, or on
// a failure notice from a peer (point-to-point messages on a second duplicate, the control
// communicator). This is the run's watchdog, in the spirit of the one PyTorch runs for NCCL:
// a peer that dies (kill -9), stops (SIGSTOP) or fails ends every collective within bounded
// time with a message naming its MPI rank, host and pid.
//
// Threading: MPI_THREAD_SERIALIZED. Collectives come from one leader thread at a time (the
// hierarchical communicator guarantees that); request_abort may come from any thread. Every
// MPI call happens under mutex_, so calls are never concurrent.
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "comm/process_link.h"

namespace mb::mpi {

class MpiLink final : public ProcessLink {
 public:
  // After MPI_Init: duplicates MPI_COMM_WORLD twice, learns every process's host and pid.
  explicit MpiLink(double timeout_s);
  MpiLink(const MpiLink&) = delete;
  MpiLink& operator=(const MpiLink&) = delete;

  const ProcessInfo& info() const override { return info_; }
  std::string name() const override { return "mpi"; }

  void all_reduce_sum(float* data, std::size_t count) override;
  void broadcast(void* data, std::size_t bytes, int root_process) override;
  void all_gather(const void* mine, std::size_t bytes, void* all) override;
  void barrier() override;
  void request_abort(const std::string& reason) override;
  void check() override;
  std::string diagnose_peers() override { return diagnose(true); }

  // True once a collective was left unfinished (failure, abort): MPI_Finalize could wait for
  // it forever, so the session ends the run with MPI_Abort instead.
  bool broken() const { return broken_.load(); }
  // Frees the duplicate communicators; before MPI_Finalize, on a healthy link only.
  void close();

 private:
  struct Peer {
    std::string host;
    int pid = 0;
  };

  // Polls `request` until it completes; throws (and marks the link broken) on a local abort,
  // a peer's failure notice, the launcher's SIGTERM, or no completion within the timeout.
  void wait(MPI_Request& request, const char* what);
  void service_control_locked();   // answers pings, records pongs and failure notices
  std::string diagnose(bool ping);  // which peers died, stopped or do not answer
  std::string describe(int process) const;
  void check_usable() const;

  ProcessInfo info_;
  std::vector<Peer> peers_;
  double timeout_s_;
  MPI_Comm coll_ = MPI_COMM_NULL;   // collectives
  MPI_Comm ctrl_ = MPI_COMM_NULL;   // failure notices, pings

  std::mutex mutex_;                // every MPI call
  std::atomic<bool> local_abort_{false}, broken_{false};
  std::string remote_failure_;      // under mutex_
  std::string abort_text_;          // kept alive for the notices' sends
  std::vector<char> alive_;         // pongs seen, under mutex_
  std::vector<float> scratch_;      // this process's chunk of the reduce-scatter
};

}  // namespace mb::mpi

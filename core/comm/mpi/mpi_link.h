// The ProcessLink over MPI: non-blocking collectives on a duplicate of MPI_COMM_WORLD, waited
// for by polling, so that a wait can end on a deadline, on a signal from the launcher, or on
// a failure notice from a peer (point-to-point messages on a second duplicate, the control
// communicator). This is the run's watchdog, in the spirit of the one PyTorch runs for NCCL:
// a peer that dies (kill -9), stops (SIGSTOP) or fails ends every collective within bounded
// time with a message naming its MPI rank, host and pid.
//
// The gradient all-reduce is point to point (mpi_link.cpp says why): each process sends every
// other process that one's share of the buffer, sums its own share over the processes in
// process order, and sends the sum to everyone; an arrival note ahead of the data tells how
// long the others were waited for, without a barrier before it.
//
// Threading: MPI_THREAD_SERIALIZED. Collectives come from one leader thread at a time (the
// hierarchical communicator guarantees that); request_abort may come from any thread. Every
// MPI call happens under mutex_, so calls are never concurrent.
#pragma once
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <span>
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

  void all_reduce_sum(float* data, std::size_t count) override { all_reduce(data, count, WireDtype::Fp32); }
  // Sends 16-bit values: half the bytes of FP32 (the values are representable: lossless).
  void all_reduce_sum_as(float* data, std::size_t count, WireDtype wire) override { all_reduce(data, count, wire); }
  bool measures_all_reduce_wait() const override { return true; }
  double all_reduce_wait_s() const override { return all_reduce_wait_s_; }
  void broadcast(void* data, std::size_t bytes, int root_process) override;
  void all_gather(const void* mine, std::size_t bytes, void* all) override;
  void barrier() override;
  void request_abort(const std::string& reason) override;
  void check() override;
  std::string diagnose_peers() override;

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

  // Polls `requests` until all complete; throws (and marks the link broken) on a local abort,
  // a peer's failure notice, the launcher's SIGTERM, or no completion within the timeout.
  void wait(std::span<MPI_Request> requests, const char* what);
  void wait(MPI_Request& request, const char* what) { wait(std::span<MPI_Request>(&request, 1), what); }
  // The all-reduce and its two phases (requests posted, then waited for); under a 16-bit
  // `wire` the shares travel packed and this process's sums are rounded to it before they go.
  void all_reduce(float* data, std::size_t count, WireDtype wire);
  void reduce_scatter(float* data, const std::vector<std::size_t>& begin, WireDtype wire);
  void all_gather_sums(float* data, const std::vector<std::size_t>& begin, WireDtype wire);
  void service_control_locked();   // answers pings, records pongs and failure notices
  // Which peers died, stopped (same host, from /proc) or do not answer a ping within
  // `ping_wait` (other hosts; zero: not asked).
  std::string diagnose(std::chrono::steady_clock::duration ping_wait);
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
  std::vector<float> scratch_;      // the other processes' copies of this process's share
  std::vector<uint16_t> packed_in_, packed_out_;   // 16-bit wire: received and sent values
  std::vector<MPI_Request> requests_;
  int arrival_note_ = 0;            // the payload of the arrival notes (never read)
  std::vector<int> arrival_in_;
  double all_reduce_wait_s_ = 0;
};

}  // namespace mb::mpi

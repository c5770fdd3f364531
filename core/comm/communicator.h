// Collective communication between replicas, as a per-rank handle (llm.c's MultiGpuConfig,
// nccl-tests' threadArgs): each replica owns one Communicator that knows its rank, the world
// size and, for device communicators, its stream, all fixed at creation. The trainer uses
// only these collectives, so the same trainer code runs with threads, with MPI processes, or
// with both at once (hierarchical: threads inside a process, MPI between processes).
//
// Two planes:
//   data plane     all_reduce_sum of the gradients, on buffers in memory_space(); device
//                  communicators only enqueue it on stream().
//   control plane  small host-memory collectives (broadcast, all-gather, barrier) for the
//                  initial weights, step statistics, digests and decisions; blocking.
// Every collective is called by every rank, each from its own thread, in the same order.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "comm/wire_format.h"
#include "config/scenario.h"
#include "util/deadline.h"

namespace mb {

enum class MemorySpace { Host, CudaDevice };

// Where time inside host collectives went, accumulated since the last take_times().
struct CollectiveTimes {
  double wait_s = 0;       // waiting for the slowest rank to arrive
  double transfer_s = 0;   // the exchange itself, once everyone was there
  double hidden_s = 0;     // exchange that ran under the backward pass (not a part of the step)
  CollectiveTimes& operator+=(const CollectiveTimes& o) {
    wait_s += o.wait_s, transfer_s += o.transfer_s, hidden_s += o.hidden_s;
    return *this;
  }
};

// A bucket of the gradient as the exchange sees it (--bucket-mb, comm/gradient_buckets.h): its
// FP32 bytes, and how long before this rank's all_reduce_sum call its gradient was complete.
struct OverlapBucket {
  double bytes = 0;
  double lead_s = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;                 // 0 .. size()-1, unique over the whole run
  virtual int size() const = 0;                 // replicas in the run, over all processes
  virtual std::string name() const = 0;         // "threads", "mpi+threads", "nccl", ...

  // Finishes set-up that needs every rank at once (NCCL's ncclCommInitRank), from this rank's
  // own thread, before its first collective. Collective.
  virtual void connect() {}

  // ---- data plane ----
  virtual MemorySpace memory_space() const { return MemorySpace::Host; }
  // The cudaStream_t the device collectives are enqueued on (owned by the communicator);
  // nullptr for host communicators. Callers order their work against it with events.
  virtual void* stream() const { return nullptr; }
  // Whether all_reduce_sum may be captured into a CUDA graph (NCCL's collectives may; a
  // host rendezvous may not). A capability, so engines never need to know the type.
  virtual bool graph_capturable() const { return false; }
  // data[i] <- sum over ranks of data[i], bit-identical on every rank.
  virtual void all_reduce_sum(float* data, std::size_t count) = 0;
  // A compressed all-reduce's exchange (comm/compressed_all_reduce.h): every rank's data holds
  // values that `wire` carries exactly; the FP32 sums, in rank order, come back rounded to
  // `wire` (the all-gather half travels as `wire` too). A communicator that moves bytes between
  // processes sends 16-bit values, losslessly; this default, for memory that every rank shares,
  // exchanges FP32 and rounds the result: the same bits.
  virtual void all_reduce_sum_as(float* data, std::size_t count, WireDtype wire) {
    all_reduce_sum(data, count);
    round_to_wire(std::span<float>(data, count), wire);
  }
  // Bytes per value that an all_reduce_sum puts on the wire: what a simulated link and the
  // breakdown count (2 under a compressed all-reduce).
  virtual std::size_t all_reduce_wire_bytes() const { return sizeof(float); }
  // The next all_reduce_sum's buckets, in the order the backward pass completed them
  // (--bucket-mb): a simulated link overlaps their wire time with the backward pass, as a NIC
  // would; a communicator whose exchange is the replicas' own work ignores it.
  virtual void overlap_next_all_reduce(std::span<const OverlapBucket> buckets) { (void)buckets; }

  // ---- control plane (host memory) ----
  // data <- root's data, on every rank.
  virtual void broadcast_bytes(void* data, std::size_t bytes, int root) = 0;
  // all[r * bytes, (r+1) * bytes) <- rank r's `mine`, on every rank (all holds size()*bytes).
  virtual void all_gather_bytes(const void* mine, std::size_t bytes, void* all) = 0;
  virtual void barrier() = 0;

  // One rank failed: ranks blocked in (or later entering) a collective give up with an
  // exception instead of waiting forever. Safe to call from any thread, any number of times.
  virtual void abort(const std::string& reason) = 0;

  // Whether this rank must give up: throws BarrierAborted once abort() was called (another
  // rank failed first) and DeviceError for a failure of this rank's own collectives that the
  // library reported asynchronously (NCCL). Engines call it from the rank's own thread while
  // they poll for device work, so that no wait on a collective outlasts a failure. Cheap.
  virtual void check() {}
  // After check() threw: ends this rank's collectives still queued or running on the device
  // (NCCL: ncclCommAbort), so its streams drain. From the rank's own thread, after destroying
  // every CUDA graph that captured them (NCCL waits for such graphs). Idempotent.
  virtual void cancel_device_work() {}

  virtual CollectiveTimes take_times() { return {}; }

  // ---- deadlines (--timeout) ----
  // How long any wait of this rank on the others, or on its own device, may last before the
  // run fails as stuck (StallError naming who did not arrive or finish).
  virtual double timeout_s() const { return kDefaultTimeoutS; }
  // This rank started training step `step` (counting over the run): engines that run ahead
  // of the host say so, so that a stall can be traced to the rank that stopped advancing.
  virtual void note_progress(int64_t step) { (void)step; }
  // After a wait outlived timeout_s(): what is known about the ranks and processes that stopped
  // making progress ("replica 1 last started step 3, the others step 64"; a process that
  // died, is stopped or does not answer), or empty. May take a few seconds (pings).
  virtual std::string describe_stall() { return {}; }

  // Typed helpers over the control plane (trivially copyable values only).
  template <typename T>
  std::vector<T> all_gather(const T& mine) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> all(static_cast<std::size_t>(size()));
    all_gather_bytes(&mine, sizeof(T), all.data());
    return all;
  }
  template <typename T>
  void broadcast(std::span<T> data, int root) {
    static_assert(std::is_trivially_copyable_v<T>);
    broadcast_bytes(data.data(), data.size_bytes(), root);
  }
};

// In-process communicators for `ranks` CPU replicas, one handle per rank (rank r at [r]).
std::vector<std::unique_ptr<Communicator>> make_thread_communicators(int ranks, double timeout_s = kDefaultTimeoutS);

}  // namespace mb

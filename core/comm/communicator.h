// Collective communication between replicas. The trainer only sees this interface, so
// the in-process CPU implementation, NCCL (GPUs) and MPI (processes) are interchangeable.
// Every collective is called by all ranks, each from its own thread, with its own buffer.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace mb {

enum class MemorySpace { Host, CudaDevice };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  virtual std::string name() const = 0;              // "threads", "nccl", "in-gpu (simulated)"
  virtual MemorySpace memory_space() const = 0;      // where the buffers passed in must live

  // data[i] <- sum over ranks of data[i], on every rank.
  // `stream` is the caller's cudaStream_t for device communicators, ignored on host.
  virtual void all_reduce_sum(int rank, float* data, std::size_t count, void* stream = nullptr) = 0;

  // data <- root's data, on every rank.
  virtual void broadcast(int rank, float* data, std::size_t count, int root, void* stream = nullptr) = 0;

  // Blocks until every rank has arrived.
  virtual void barrier(int rank) = 0;

  // Called when one rank failed: ranks blocked in (or later entering) a collective give up
  // with an exception instead of waiting forever. Must be safe to call from any thread.
  virtual void abort() {}
};

// In-process communicator for CPU replicas (one thread per rank, shared memory).
std::unique_ptr<Communicator> make_thread_communicator(int ranks);

}  // namespace mb

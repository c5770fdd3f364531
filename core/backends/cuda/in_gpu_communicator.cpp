// Several replicas on ONE GPU ("cuda:0,cuda:0"): NCCL refuses duplicate devices, so the
// all-reduce is simulated. Each rank records an event on its stream and publishes its
// buffer at a host rendezvous; the last rank to arrive makes one stream wait for every
// rank's event and launches one kernel that sums all buffers in rank order and writes the
// sum back to each; every rank's stream then waits for that kernel. Only enqueues: no host
// waits on the GPU unless the caller passes no stream.
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/device_select.h"
#include "backends/cuda/kernels.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb::cuda {
namespace {

class InGpuCommunicator final : public Communicator {
 public:
  InGpuCommunicator(int ranks, int device) : ranks_(ranks), device_(device), barrier_(std::max(1, ranks)) {
    MB_CHECK(ranks >= 1 && ranks <= kMaxInGpuRanks, ConfigError,
             "the in-GPU communicator supports 1 to {} replicas on one GPU, got {}", kMaxInGpuRanks, ranks);
    select_device(device);
    for (int r = 0; r < ranks; ++r) {
      ready_.push_back(make_event(false));
      copied_.push_back(make_event(false));
      internal_.push_back(make_stream());
    }
    done_ = make_event(false);
    slots_.resize(static_cast<std::size_t>(ranks));
  }

  int size() const override { return ranks_; }
  std::string name() const override { return "in-gpu (simulated)"; }
  MemorySpace memory_space() const override { return MemorySpace::CudaDevice; }

  void all_reduce_sum(int rank, float* data, std::size_t count, void* stream) override {
    check_rank(rank);
    if (ranks_ == 1 || count == 0) return;
    cudaStream_t s = stream_for(rank, stream);
    CUDA_CHECK(cudaEventRecord(ready_[rank].get(), s));
    slots_[rank] = Slot{data, count, s};
    // The last rank to arrive enqueues the reduction before anyone is released, so done_ is
    // recorded before any rank waits on it, and no rank re-records its ready_ event before
    // the reduction's stream has taken its dependency on it.
    barrier_.arrive_and_wait([this] { enqueue_sum(); });
    if (!error_.empty()) throw DeviceError(error_);
    CUDA_CHECK(cudaStreamWaitEvent(s, done_.get(), 0));
    finish(rank, stream);
  }

  void broadcast(int rank, float* data, std::size_t count, int root, void* stream) override {
    check_rank(rank);
    MB_CHECK(root >= 0 && root < ranks_, Error, "in-gpu: broadcast root {} out of range (communicator of {})", root,
             ranks_);
    if (ranks_ == 1 || count == 0) return;
    cudaStream_t s = stream_for(rank, stream);
    CUDA_CHECK(cudaEventRecord(ready_[rank].get(), s));
    slots_[rank] = Slot{data, count, s};
    barrier_.arrive_and_wait([this, root] { enqueue_broadcast(root); });
    if (!error_.empty()) throw DeviceError(error_);
    finish(rank, stream);
  }

  void barrier(int rank) override {
    check_rank(rank);
    barrier_.arrive_and_wait();
  }

  void abort() override { barrier_.abort(); }

 private:
  struct Slot {
    float* data = nullptr;
    std::size_t count = 0;
    cudaStream_t stream = nullptr;
  };

  void check_rank(int rank) const {
    MB_CHECK(rank >= 0 && rank < ranks_, Error, "in-gpu: rank {} out of range (communicator of {})", rank, ranks_);
  }

  cudaStream_t stream_for(int rank, void* stream) {
    CUDA_CHECK(cudaSetDevice(device_));
    if (stream) return static_cast<cudaStream_t>(stream);
    CUDA_CHECK(cudaDeviceSynchronize());  // the caller's data may come from any stream
    return internal_[rank].get();
  }

  void finish(int rank, void* stream) {
    if (!stream) CUDA_CHECK(cudaStreamSynchronize(internal_[rank].get()));
  }

  bool same_counts() {
    for (const Slot& s : slots_) {
      if (s.count != slots_[0].count) {
        error_ = fmt::format("in-gpu: ranks disagree on the element count ({} vs {})", s.count, slots_[0].count);
        return false;
      }
    }
    return true;
  }

  // Runs on the last-arriving thread while the others wait; errors go to error_, which
  // every rank checks after the rendezvous (throwing here would strand the others).
  void enqueue_sum() {
    error_.clear();
    try {
      if (!same_counts()) return;
      cudaStream_t s = slots_[0].stream;
      BufferSet set{};
      for (int r = 0; r < ranks_; ++r) {
        if (r > 0) CUDA_CHECK(cudaStreamWaitEvent(s, ready_[r].get(), 0));
        set.ptr[r] = slots_[r].data;
      }
      launch_sum_buffers(set, ranks_, slots_[0].count, s);
      CUDA_CHECK(cudaEventRecord(done_.get(), s));
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }

  void enqueue_broadcast(int root) {
    error_.clear();
    try {
      if (!same_counts()) return;
      const Slot& src = slots_[root];
      for (int r = 0; r < ranks_; ++r) {
        if (r == root) continue;
        const Slot& dst = slots_[r];
        CUDA_CHECK(cudaStreamWaitEvent(dst.stream, ready_[root].get(), 0));
        CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.count * sizeof(float), cudaMemcpyDeviceToDevice, dst.stream));
        CUDA_CHECK(cudaEventRecord(copied_[r].get(), dst.stream));
        // The root must not overwrite its buffer before every copy has read it.
        CUDA_CHECK(cudaStreamWaitEvent(src.stream, copied_[r].get(), 0));
      }
    } catch (const std::exception& e) {
      error_ = e.what();
    }
  }

  const int ranks_;
  const int device_;
  SpinBarrier barrier_;
  std::vector<Event> ready_, copied_;
  Event done_;
  std::vector<Stream> internal_;
  std::vector<Slot> slots_;
  std::string error_;   // written only inside the rendezvous, read after it
};

}  // namespace

std::unique_ptr<Communicator> make_in_gpu_communicator(int ranks, int device) {
  return std::make_unique<InGpuCommunicator>(ranks, device);
}

}  // namespace mb::cuda

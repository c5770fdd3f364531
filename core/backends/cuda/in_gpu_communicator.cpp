// Several replicas on ONE GPU ("cuda:0,cuda:0"): NCCL refuses duplicate devices, so the
// all-reduce is simulated. Each rank records an event on its communicator stream and
// publishes its buffer at a host rendezvous; the last rank to arrive makes rank 0's stream
// wait for every rank's event and launches one kernel that sums all buffers in rank order
// and writes the sum back to each; every rank's stream then waits for that kernel. Only
// enqueues: no host waits on the GPU. The control plane goes through the host communicators.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_raii.h"
#include "backends/cuda/device_select.h"
#include "backends/cuda/kernels.h"
#include "util/deadline.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb::cuda {
namespace {

// What the ranks on the GPU share; touched only inside the rendezvous.
struct Shared {
  Shared(int ranks, int device, double timeout_s)
      : ranks(ranks), device(device), barrier(ranks, timeout_s), slots(std::size_t(ranks)) {
    select_device(device);
    for (int r = 0; r < ranks; ++r) ready.push_back(make_event(false));
    done = make_event(false);
  }
  struct Slot {
    float* data = nullptr;
    std::size_t count = 0;
    cudaStream_t stream = nullptr;
  };
  const int ranks, device;
  SpinBarrier barrier;
  std::vector<Event> ready;
  Event done;
  std::vector<Slot> slots;
  std::string error;   // written only inside the rendezvous, read after it
};

class InGpuCommunicator final : public Communicator {
 public:
  InGpuCommunicator(std::shared_ptr<Shared> shared, int local, std::unique_ptr<Communicator> host)
      : s_(std::move(shared)), local_(local), host_(std::move(host)) {
    select_device(s_->device);
    stream_ = make_stream();
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string name() const override { return "in-gpu (simulated)"; }
  MemorySpace memory_space() const override { return MemorySpace::CudaDevice; }
  void* stream() const override { return stream_.get(); }

  void all_reduce_sum(float* data, std::size_t count) override {
    if (s_->ranks == 1 || count == 0) return;
    CUDA_CHECK(cudaSetDevice(s_->device));
    CUDA_CHECK(cudaEventRecord(s_->ready[local_].get(), stream_.get()));
    s_->slots[local_] = Shared::Slot{data, count, stream_.get()};
    // The last rank to arrive enqueues the reduction before anyone is released, so done is
    // recorded before any rank waits on it, and no rank re-records its ready event before
    // the reduction's stream has taken its dependency on it.
    try {
      s_->barrier.arrive_and_wait([this] { enqueue_sum(); });
    } catch (const BarrierTimeout& t) {
      const std::string why = describe_stall();
      throw StallError(fmt::format("in-gpu: replica {} on cuda:{} waited {:g} s (--timeout) for the other replicas "
                                   "of the simulated all-reduce, which did not arrive: stuck, not failed{}",
                                   rank(), s_->device, t.seconds(), why.empty() ? "" : " (" + why + ")"));
    }
    if (!s_->error.empty()) throw DeviceError(s_->error);
    CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), s_->done.get(), 0));
  }

  void broadcast_bytes(void* data, std::size_t bytes, int root) override { host_->broadcast_bytes(data, bytes, root); }
  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    host_->all_gather_bytes(mine, bytes, all);
  }
  void barrier() override { host_->barrier(); }
  void abort(const std::string& reason) override {
    s_->barrier.abort();
    host_->abort(reason);
  }
  // The reduction never waits on the device for a peer (the rendezvous is on the host, and
  // aborting it releases every rank), so there is no device work to cancel.
  void check() override { host_->check(); }
  CollectiveTimes take_times() override { return host_->take_times(); }
  double timeout_s() const override { return host_->timeout_s(); }
  void note_progress(int64_t step) override { host_->note_progress(step); }
  std::string describe_stall() override { return host_->describe_stall(); }

 private:
  // Runs on the last-arriving thread while the others wait; errors go to error, which every
  // rank checks after the rendezvous (throwing here would strand the others).
  void enqueue_sum() {
    s_->error.clear();
    try {
      for (const auto& slot : s_->slots)
        if (slot.count != s_->slots[0].count) {
          s_->error = fmt::format("in-gpu: ranks disagree on the element count ({} vs {})", slot.count,
                                  s_->slots[0].count);
          return;
        }
      cudaStream_t s = s_->slots[0].stream;
      BufferSet set{};
      for (int r = 0; r < s_->ranks; ++r) {
        if (r > 0) CUDA_CHECK(cudaStreamWaitEvent(s, s_->ready[r].get(), 0));
        set.ptr[r] = s_->slots[r].data;
      }
      launch_sum_buffers(set, s_->ranks, s_->slots[0].count, s);
      CUDA_CHECK(cudaEventRecord(s_->done.get(), s));
    } catch (const std::exception& e) {
      s_->error = e.what();
    }
  }

  std::shared_ptr<Shared> s_;
  const int local_;
  std::unique_ptr<Communicator> host_;
  Stream stream_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_in_gpu_communicators(int device,
                                                                     std::vector<std::unique_ptr<Communicator>> host) {
  const int ranks = static_cast<int>(host.size());
  MB_CHECK(ranks >= 1 && ranks <= kMaxInGpuRanks, ConfigError,
           "the in-GPU communicator supports 1 to {} replicas on one GPU, got {}", kMaxInGpuRanks, ranks);
  auto shared = std::make_shared<Shared>(ranks, device, host.front()->timeout_s());
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < ranks; ++r) out.push_back(std::make_unique<InGpuCommunicator>(shared, r, std::move(host[r])));
  return out;
}

}  // namespace mb::cuda

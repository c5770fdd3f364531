// In-process all-reduce for CPU replicas: each rank publishes its buffer, then reduces ITS
// chunk across all ranks (reduce-scatter, every core busy at once) and finally copies the
// other ranks' reduced chunks (all-gather). Each element is summed by exactly one rank in
// rank order, so every replica ends with bit-identical gradients.
#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/communicator.h"
#include "util/error.h"
#include "util/spin_barrier.h"

namespace mb {
namespace {

class ThreadCommunicator final : public Communicator {
 public:
  explicit ThreadCommunicator(int ranks) : ranks_(ranks), buffers_(ranks, nullptr), barrier_(ranks) {}

  int size() const override { return ranks_; }
  std::string name() const override { return "threads"; }
  MemorySpace memory_space() const override { return MemorySpace::Host; }

  void all_reduce_sum(int rank, float* data, std::size_t count, void*) override {
    if (ranks_ == 1) return;
    buffers_[rank] = data;
    barrier_.arrive_and_wait();  // every buffer published

    // Chunk boundaries rounded to 16 floats (one cache line) so ranks never share a line.
    const std::size_t chunk = (count + ranks_ - 1) / ranks_;
    const std::size_t aligned = (chunk + 15) / 16 * 16;
    auto chunk_range = [&](int r) {
      std::size_t begin = std::min(count, aligned * r);
      std::size_t end = std::min(count, begin + aligned);
      return std::pair{begin, end};
    };

    auto [begin, end] = chunk_range(rank);
    // Sum in rank order 0, 1, ..., N-1 whichever rank owns the chunk; a small stack block
    // keeps the owner's own input readable while the result is built.
    constexpr std::size_t kBlock = 512;
    float acc[kBlock];
    for (std::size_t b = begin; b < end; b += kBlock) {
      const std::size_t n = std::min(kBlock, end - b);
      std::memcpy(acc, buffers_[0] + b, n * sizeof(float));
      for (int r = 1; r < ranks_; ++r) {
        const float* in = buffers_[r] + b;
        for (std::size_t i = 0; i < n; ++i) acc[i] += in[i];
      }
      std::memcpy(data + b, acc, n * sizeof(float));
    }
    barrier_.arrive_and_wait();  // every chunk reduced

    for (int r = 0; r < ranks_; ++r) {
      if (r == rank) continue;
      auto [b, e] = chunk_range(r);
      if (e > b) std::memcpy(data + b, buffers_[r] + b, (e - b) * sizeof(float));
    }
    barrier_.arrive_and_wait();  // nobody reads our buffer any more: safe to return
  }

  void broadcast(int rank, float* data, std::size_t count, int root, void*) override {
    if (ranks_ == 1) return;
    buffers_[rank] = data;
    barrier_.arrive_and_wait();
    if (rank != root) std::memcpy(data, buffers_[root], count * sizeof(float));
    barrier_.arrive_and_wait();
  }

  void barrier(int) override { barrier_.arrive_and_wait(); }
  void abort() override { barrier_.abort(); }

 private:
  const int ranks_;
  std::vector<float*> buffers_;
  SpinBarrier barrier_;
};

}  // namespace

std::unique_ptr<Communicator> make_thread_communicator(int ranks) {
  // Checked here, not in the constructor: its member initialisers already size a vector by it.
  MB_CHECK(ranks >= 1, ConfigError, "a communicator needs at least one rank, got {}", ranks);
  return std::make_unique<ThreadCommunicator>(ranks);
}

}  // namespace mb

// A ProcessLink between "processes" that are thread groups of one test process, with the
// semantics of the MPI link (each element summed once by its owner, in process order, then
// copied; failure notices become PeerFailure on the others). Lets the hierarchical
// communicator and the trainer be tested as P processes x T threads without mpirun.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "comm/communicator.h"
#include "comm/hierarchical_communicator.h"
#include "comm/process_link.h"
#include "util/spin_barrier.h"

namespace mb::test {

class LoopbackHub {
 public:
  explicit LoopbackHub(int processes) : processes_(processes), barrier_(processes), slots_(processes) {}

  int processes() const { return processes_; }

  void all_reduce_sum(int p, float* data, std::size_t count) {
    slots_[p] = data;
    arrive(p, [&] { result_.assign(count, 0.0f); });
    const std::size_t chunk = (count + processes_ - 1) / processes_;
    const std::size_t begin = std::min(count, chunk * p), end = std::min(count, begin + chunk);
    for (std::size_t i = begin; i < end; ++i) {
      float acc = static_cast<const float*>(slots_[0])[i];
      for (int q = 1; q < processes_; ++q) acc += static_cast<const float*>(slots_[q])[i];
      result_[i] = acc;
    }
    arrive(p, [] {});
    std::memcpy(data, result_.data(), count * sizeof(float));
    arrive(p, [] {});
  }

  void broadcast(int p, void* data, std::size_t bytes, int root) {
    slots_[p] = data;
    arrive(p, [] {});
    if (p != root) std::memcpy(data, slots_[root], bytes);
    arrive(p, [] {});
  }

  void all_gather(int p, const void* mine, std::size_t bytes, void* all) {
    slots_[p] = const_cast<void*>(mine);
    arrive(p, [] {});
    for (int q = 0; q < processes_; ++q) std::memcpy(static_cast<char*>(all) + bytes * q, slots_[q], bytes);
    arrive(p, [] {});
  }

  void barrier(int p) { arrive(p, [] {}); }

  void fail(int p, const std::string& reason) {
    {
      std::lock_guard lock(mutex_);
      if (failed_process_ < 0) failed_process_ = p, reason_ = reason;
    }
    barrier_.abort();
  }

 private:
  template <typename F>
  void arrive(int p, F&& completion) {
    try {
      barrier_.arrive_and_wait(completion);
    } catch (const BarrierAborted&) {
      std::lock_guard lock(mutex_);
      if (failed_process_ >= 0 && failed_process_ != p)
        throw PeerFailure(fmt::format("process {} (loopback) failed: {}", failed_process_, reason_));
      throw;
    }
  }

  const int processes_;
  SpinBarrier barrier_;
  std::vector<void*> slots_;
  std::vector<float> result_;
  std::mutex mutex_;
  int failed_process_ = -1;
  std::string reason_;
};

class LoopbackLink final : public ProcessLink {
 public:
  LoopbackLink(std::shared_ptr<LoopbackHub> hub, int process) : hub_(std::move(hub)) {
    info_.process = process;
    info_.processes = hub_->processes();
    info_.local_process = process;
    info_.local_processes = hub_->processes();
    info_.host = "loopback";
  }
  const ProcessInfo& info() const override { return info_; }
  std::string name() const override { return "loopback"; }
  void all_reduce_sum(float* data, std::size_t count) override { hub_->all_reduce_sum(info_.process, data, count); }
  void broadcast(void* data, std::size_t bytes, int root) override { hub_->broadcast(info_.process, data, bytes, root); }
  void all_gather(const void* mine, std::size_t bytes, void* all) override {
    hub_->all_gather(info_.process, mine, bytes, all);
  }
  void barrier() override { hub_->barrier(info_.process); }
  void request_abort(const std::string& reason) override { hub_->fail(info_.process, reason); }

 private:
  std::shared_ptr<LoopbackHub> hub_;
  ProcessInfo info_;
};

// P links joined by one hub.
inline std::vector<std::shared_ptr<ProcessLink>> make_loopback_links(int processes) {
  auto hub = std::make_shared<LoopbackHub>(processes);
  std::vector<std::shared_ptr<ProcessLink>> out;
  for (int p = 0; p < processes; ++p) out.push_back(std::make_shared<LoopbackLink>(hub, p));
  return out;
}

// P processes x T threads over loopback links, in rank order (one process: threads alone).
inline std::vector<std::unique_ptr<Communicator>> make_world(int processes, int threads) {
  using Comms = std::vector<std::unique_ptr<Communicator>>;
  if (processes == 1) return make_thread_communicators(threads);
  auto links = make_loopback_links(processes);
  std::vector<Comms> per(static_cast<std::size_t>(processes));
  std::vector<std::thread> makers;
  for (int p = 0; p < processes; ++p) makers.emplace_back([&, p] { per[p] = make_process_communicators(threads, links[p]); });
  for (auto& t : makers) t.join();
  Comms all;
  for (auto& c : per)
    for (auto& x : c) all.push_back(std::move(x));
  return all;
}

}  // namespace mb::test

// A communicator that wraps another and passes every collective through, for wrappers that
// change one thing (comm/simulated_link.h: the all-reduce's duration; comm/
// compressed_all_reduce.h: what it carries). Times a wrapper measured itself wait in pending_
// until take_times() hands them out with the inner communicator's.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "comm/communicator.h"

namespace mb {

class ForwardingCommunicator : public Communicator {
 public:
  explicit ForwardingCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return inner_->name(); }
  void connect() override { inner_->connect(); }
  MemorySpace memory_space() const override { return inner_->memory_space(); }
  void all_reduce_sum(float* data, std::size_t count) override { inner_->all_reduce_sum(data, count); }
  std::size_t all_reduce_wire_bytes() const override { return inner_->all_reduce_wire_bytes(); }
  void overlap_next_all_reduce(std::span<const OverlapBucket> buckets) override {
    inner_->overlap_next_all_reduce(buckets);
  }
  void broadcast_bytes(void* data, std::size_t bytes, int root) override { inner_->broadcast_bytes(data, bytes, root); }
  void all_gather_bytes(const void* mine, std::size_t bytes, void* all) override {
    inner_->all_gather_bytes(mine, bytes, all);
  }
  void barrier() override { inner_->barrier(); }
  void abort(const std::string& reason) override { inner_->abort(reason); }
  void check() override { inner_->check(); }
  void cancel_device_work() override { inner_->cancel_device_work(); }
  CollectiveTimes take_times() override {
    CollectiveTimes t = std::exchange(pending_, CollectiveTimes{});
    t += inner_->take_times();
    return t;
  }
  double timeout_s() const override { return inner_->timeout_s(); }
  void note_progress(int64_t step) override { inner_->note_progress(step); }
  std::string describe_stall() override { return inner_->describe_stall(); }

 protected:
  std::unique_ptr<Communicator> inner_;
  CollectiveTimes pending_;   // measured by the wrapper, not yet taken
};

}  // namespace mb

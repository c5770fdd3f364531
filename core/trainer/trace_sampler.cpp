// A replica's sampled steps (see trace_sampler.h).
#include "trainer/trace_sampler.h"

#include <algorithm>

namespace mb {

TraceSampler::TraceSampler(bool on, int64_t total_steps) : on_(on) {
  stride_ = std::max<int64_t>(1, (total_steps + kMaxTraceSteps - 1) / kMaxTraceSteps);
  capacity_ = on ? std::size_t(total_steps / stride_ + 1) : 0;
  kept_.reserve(capacity_);
}

void TraceSampler::add(int64_t run_step, double start_s, const PhaseTimes& phases, int epoch, int64_t step_in_epoch) {
  if (!on_ || run_step % stride_ != 0 || kept_.size() >= capacity_) return;
  kept_.push_back({start_s, phases, epoch, static_cast<int32_t>(step_in_epoch)});
}

// Fixed-size blocks (every rank computed the same capacity); step 0 marks the end.
std::vector<std::vector<TraceStep>> TraceSampler::gather(Communicator& comm) {
  const int n = comm.size();
  kept_.resize(capacity_);
  std::vector<TraceStep> all(capacity_ * std::size_t(n));
  comm.all_gather_bytes(kept_.data(), capacity_ * sizeof(TraceStep), all.data());
  if (comm.rank() != 0) return {};
  std::vector<std::vector<TraceStep>> out(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r)
    for (std::size_t k = 0; k < capacity_; ++k) {
      const TraceStep& t = all[std::size_t(r) * capacity_ + k];
      if (t.step > 0) out[std::size_t(r)].push_back(t);
    }
  return out;
}

}  // namespace mb

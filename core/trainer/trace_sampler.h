// A replica's sampled steps for the Chrome trace: every stride-th step of the run, at most
// kMaxTraceSteps, kept in a buffer sized once (every rank computes the same size), then
// gathered in fixed-size blocks so that rank 0 gets every replica's samples, threads and
// processes alike.
#pragma once
#include <cstdint>
#include <vector>

#include "comm/communicator.h"
#include "records/chrome_trace.h"

namespace mb {

class TraceSampler {
 public:
  static constexpr int64_t kMaxTraceSteps = 2000;   // per replica: a trace of a few MB, sampled evenly

  // Off: keeps nothing. On: every stride-th of the run's `total_steps` steps.
  TraceSampler(bool on, int64_t total_steps);

  // Run step `run_step` (from 0) started `start_s` after the run's common start and took `phases`.
  void add(int64_t run_step, double start_s, const PhaseTimes& phases, int epoch, int64_t step_in_epoch);
  // Collective over `comm`: every replica's samples to rank 0 (rank order); empty elsewhere.
  std::vector<std::vector<TraceStep>> gather(Communicator& comm);

 private:
  const bool on_;
  int64_t stride_ = 1;
  std::size_t capacity_ = 0;
  std::vector<TraceStep> kept_;
};

}  // namespace mb

// Per-step phase events of a run as a Chrome trace (the JSON Trace Event format that
// chrome://tracing and https://ui.perfetto.dev open): one track (thread) per replica, one
// complete event ("ph": "X") per phase of each sampled step - forward, backward, wait,
// all-reduce, optimizer - in the order a CPU replica runs them, laid out from the step's
// start. Written by `mirrorbench-cli train --trace FILE`.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "records/run_record.h"
#include "util/phase_times.h"

namespace mb {

// One sampled step of one replica (trivially copyable: gathered across processes).
struct TraceStep {
  double start_s = 0;   // since the run's common start (after warm-up), on that replica's clock
  PhaseTimes phases;    // that step's own
  int32_t epoch = 0;    // 1-based
  int32_t step = 0;     // 1-based within the epoch
};

// traces[r]: replica r's sampled steps. The record names the run and its replicas.
std::string chrome_trace_json(const RunRecord& record, const std::vector<std::vector<TraceStep>>& traces);
void write_chrome_trace(const std::filesystem::path& file, const RunRecord& record,
                        const std::vector<std::vector<TraceStep>>& traces);   // atomic

// The phases of a step in the order a replica runs them, for the trace and the GUI's timeline.
inline constexpr const char* kPhaseNames[] = {"forward", "backward", "wait", "all-reduce", "optimizer"};
inline double phase_seconds(const PhaseTimes& t, int phase) {
  switch (phase) {
    case 0: return t.forward_s;
    case 1: return t.backward_s;
    case 2: return t.wait_s;
    case 3: return t.allreduce_s;
    default: return t.optimizer_s;
  }
}

}  // namespace mb

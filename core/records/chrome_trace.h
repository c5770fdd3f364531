// Per-step phase events of a run as a Chrome trace (the JSON Trace Event format that
// chrome://tracing and https://ui.perfetto.dev open): one track (thread) per replica, one
// complete event ("ph": "X") per part of each sampled step - the time categories of
// util/phase_times.h in their order (forward, backward, wait, all-reduce, optimizer), named by
// their labels - laid out from the step's start; a category measured beside the step (CPU
// time) is a counter ("ph": "C") per replica. Written by `mirrorbench-cli train --trace FILE`.
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

}  // namespace mb

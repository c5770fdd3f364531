// The machine-readable progress stream of a run (`mirrorbench-cli train --progress json`):
// one JSON object per line, so another program can follow a run it started, e.g. the
// workbench following `mpirun ... mirrorbench-cli train` in a child process:
//   {"event":"start","config":{...}}      the run's configuration (RunConfig as in records)
//   {"event":"step","epoch":1,"step":40,...}   StepProgress
//   {"event":"epoch","metrics":{...}}     EpochMetrics as in records
//   {"event":"log","level":"info","line":"..."}
//   {"event":"end","record":{...}}        the whole run record
// Written and read by the same code, so the two ends cannot drift apart.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "records/run_record.h"
#include "util/error.h"
#include "trainer/train_observer.h"

namespace mb {

struct ProgressEvent {
  enum class Kind { Start, Step, Epoch, Log, End };
  Kind kind = Kind::Log;
  RunConfig config;          // Start
  StepProgress step;         // Step
  EpochMetrics epoch;        // Epoch
  LogLevel level = LogLevel::Info;   // Log
  std::string line;          // Log
  RunRecord record;          // End
};

std::string to_json_line(const ProgressEvent& event);   // one line, no newline

// nullopt for a line that is not an event (anything not starting with '{': a launcher's own
// messages share the stream); throws DataError for an event line that does not parse.
std::optional<ProgressEvent> parse_progress_line(std::string_view line);

// An observer that writes every event to `out` (a FILE*, flushed per line) — for the CLI.
TrainObserver json_progress_observer(std::FILE* out);

}  // namespace mb

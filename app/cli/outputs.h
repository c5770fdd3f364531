// The files a training run writes (--save, --json, --csv), kept apart from the train command
// so that other launchers (MPI ranks) write the same way: every requested output is written
// even when another fails, each failure is reported on its own line, and all of them carry
// the run's id, so a set mixed from two runs (a kill between two writes) can be told apart.
#pragma once
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb::cli {

struct RunOutputs {
  std::string checkpoint;   // --save: safetensors, __metadata__ run_id/status/epochs
  std::string json;         // --json: the run record (its "id")
  std::string csv;          // --csv: one row per epoch (column run_id)
};

// Fails before training, not after it, when an output could not be written: the path must
// not be a folder, and its nearest existing folder must take a new file. Throws ConfigError.
void check_writable(const char* flag, const std::string& file);
void check_writable(const RunOutputs& outputs);

struct OutputResult {
  std::string flag, path;
  std::string error;   // empty: written
};

// Writes every requested output, the checkpoint first (the most expensive to lose), then the
// record and the CSV, each attempted whatever happened to the others. `params` may be empty
// (a run that failed before it had weights): a requested checkpoint is then a failure.
std::vector<OutputResult> write_outputs(const RunOutputs& outputs, const RunRecord& record,
                                        std::span<const float> params);

// One line per output on `err` for failures and one summary line on `out` for what was
// written; returns the number of failures.
int report_outputs(const std::vector<OutputResult>& results, const std::string& run_id, std::FILE* out,
                   std::FILE* err);

}  // namespace mb::cli

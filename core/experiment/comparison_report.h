// One run against its baseline among stored runs, as plain values, and the same as plain
// text for a terminal: what a CLI `compare`/`reference` command prints, with the GUI's
// baseline choice and verdict.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "experiment/baseline.h"
#include "experiment/diagnosis.h"
#include "experiment/run_store.h"
#include "experiment/verdict.h"
#include "records/run_record.h"

namespace mb {

struct RunComparison {
  std::string key;                          // describe_baseline_key(run.config)
  std::optional<RunRecord> baseline;        // none: no baseline for this configuration yet
  bool run_is_baseline = false;             // the run is the baseline of its own key
  std::optional<EpochTimeComparison> time;  // with a baseline other than the run
  std::optional<ReferenceVerdict> verdict;  // when criteria_apply(run), with a baseline other than the run
  Diagnosis diagnosis;                      // what bounds the run (its own measurements and the baseline's)
};

// `run` against a baseline the caller chose (a plan's own baseline run).
RunComparison compare_runs(const RunRecord& baseline, const RunRecord& run);

// `run` need not be among `runs` (a record fresh from the trainer): its baseline is the one it
// was compared with when it was saved (baseline_of), else its configuration's.
RunComparison compare_with_baseline(std::span<const RunRecord> runs, const BaselineBook& book, const RunRecord& run);
// The same against a store's runs and pins; files that cannot be read are skipped and, when
// `warnings` is given, named there.
RunComparison compare_with_baseline(const RunStore& store, const RunRecord& run,
                                    std::vector<std::string>* warnings = nullptr);

// Several lines, ASCII, ending in a newline: the run, its baseline, the time and accuracy
// numbers and, where they apply, the two criteria with "yes"/"no".
std::string comparison_text(const RunRecord& run, const RunComparison& comparison);

}  // namespace mb

// Which stored run is the single-device baseline of a run: the comparison key, the pins, the
// baseline each run was compared with when it was saved, and one index of every run's
// baseline that both the GUI's history and a single lookup (a CLI comparing one record) use,
// so they cannot disagree.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

// Runs are compared only with runs of the same data set (and size), model, per-device
// workload and device kind and backend. For a run in per-replica-batch mode the baseline is
// the single-device run with that per-replica batch (weak scaling); otherwise the same
// global batch. The key's text is stored in baselines.json (the pins), so it must not change.
std::string baseline_key(const RunConfig& config);
std::string describe_baseline_key(const RunConfig& config);   // for tooltips and messages

// A pin makes a run the baseline of its key: baseline_key -> run id.
using BaselinePins = std::map<std::string, std::string>;

// The baseline each run was compared with when it was saved: run id -> the baseline's id. A
// run keeps it when a newer baseline of its key appears later (a second Compare, a newer
// single-device run), so an earlier result is never silently re-scored; only the user's pin
// of another baseline for its key re-scores it (pin_baseline).
using ComparedWith = std::map<std::string, std::string>;

// What a store keeps about baselines (baselines.json).
struct BaselineBook {
  BaselinePins pins;
  ComparedWith compared;
  bool operator==(const BaselineBook&) const = default;
};

// Whether a run can be anyone's baseline: a completed single-device run with epochs, not at
// teaching pace, with no scenario field on (a pin of a balanced run is ignored: a balanced
// run is never the baseline of a lock-step one).
bool can_be_baseline(const RunRecord& run);

// The baselines of a list of runs. The baseline of a key (what a new run of that configuration
// is compared with) is its pinned run if that is still in the list, else the most recent (by
// start_time; on a tie the later in the list) run that can_be_baseline(). A run's own baseline
// is the one it was compared with (book.compared) while that is still in the list and can be a
// baseline, else its key's. Positions are indices into the list the index was built from.
struct BaselineIndex {
  std::map<std::string, std::size_t> by_key;        // baseline_key -> position of its baseline
  std::vector<std::optional<std::size_t>> of_run;   // per run: its baseline's position
  std::vector<bool> kept;                           // per run: measured against the one it was compared with

  std::optional<std::size_t> for_config(const RunConfig& config) const;
  // True when run `i` is the baseline of its key now (the one a new run would be compared with).
  bool is_baseline(std::size_t i) const { return of_run[i] == i; }
};
BaselineIndex index_baselines(std::span<const RunRecord> runs, const BaselineBook& book);

// The baseline a new run of `config` is compared with (index_baselines() underneath), or
// nullptr. The pointer points into `runs`.
const RunRecord* find_baseline(std::span<const RunRecord> runs, const BaselineBook& book, const RunConfig& config);
// The baseline `run` is measured against: for one of `runs` (by id) the one it was compared
// with while it is kept, else its key's; for a run not among them, its key's. nullptr: none.
const RunRecord* baseline_of(std::span<const RunRecord> runs, const BaselineBook& book, const RunRecord& run);

// The user pins `baseline` (a run that can be a baseline) for its key: new runs of that
// configuration and every stored run of it are measured against it from now on.
void pin_baseline(BaselineBook& book, std::span<const RunRecord> runs, const RunRecord& baseline);

}  // namespace mb

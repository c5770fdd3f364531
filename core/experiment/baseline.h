// Which stored run is the single-device baseline of a run: the comparison key, the user's
// pins, and one index of every run's baseline that both the GUI's history and a single
// lookup (a CLI comparing one record) use, so they cannot disagree.
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

// Whether a run can be anyone's baseline: a completed single-device run with epochs, not at
// teaching pace, with no simulated straggler and not balanced (a pin of a balanced run is
// ignored: a balanced run is never the baseline of a lock-step one).
bool can_be_baseline(const RunRecord& run);

// The baselines of a list of runs. The baseline of a key is its pinned run if that is still
// in the list, else the most recent (by start_time; on a tie the later in the list) run
// that can_be_baseline(). Positions are indices into the list the index was built from.
struct BaselineIndex {
  std::map<std::string, std::size_t> by_key;        // baseline_key -> position of its baseline
  std::vector<std::optional<std::size_t>> of_run;   // per run: its baseline's position

  std::optional<std::size_t> for_config(const RunConfig& config) const;
  // True when run `i` is the baseline of its own key.
  bool is_baseline(std::size_t i) const { return of_run[i] == i; }
};
BaselineIndex index_baselines(std::span<const RunRecord> runs, const BaselinePins& pins);

// One lookup with the same rules (index_baselines() underneath): the baseline of `config`
// among `runs`, or nullptr. The pointer points into `runs`.
const RunRecord* find_baseline(std::span<const RunRecord> runs, const BaselinePins& pins, const RunConfig& config);

}  // namespace mb

// Where runs live between launches: a folder with one run-record JSON file per run (written
// atomically) in runs/, plus the baseline book in baselines.json (the pins, and the baseline
// each run was compared with). The GUI's history is one
// (its location: ui/history/store_location.h); any copy of such a folder can be read too.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "experiment/baseline.h"
#include "records/run_record.h"

namespace mb {

// The history the workbench and mirrorbench-cli share: $MIRRORBENCH_HOME if set (tests,
// portable installs), else $XDG_DATA_HOME/mirrorbench/mirrorbench, else
// ~/.local/share/mirrorbench/mirrorbench (Qt's AppDataLocation for the workbench on Linux).
std::filesystem::path default_history_root();

class RunStore {
 public:
  explicit RunStore(std::filesystem::path root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path runs_dir() const { return root_ / "runs"; }
  std::filesystem::path file_for(const std::string& id) const;
  // The run's Chrome trace beside its record, when it kept one: runs/<id>.trace.json (never
  // read as a record).
  std::filesystem::path trace_file_for(const std::string& id) const;

  struct Loaded {
    std::vector<RunRecord> runs;        // oldest first
    std::vector<std::string> warnings;  // one per file that could not be read
  };
  // Reads every *.json in runs_dir() but the traces; a corrupt or foreign file is skipped
  // with a warning.
  Loaded load_runs() const;

  void save(const RunRecord& record) const;        // atomic; throws Error
  void remove(const std::string& id) const;        // the record and its trace; missing files are no error

  // The baseline book: pins (baseline_key -> run id) and comparisons (run id -> baseline id).
  // A missing file is an empty book; an unreadable one is empty with a warning. Files written
  // before the comparisons were kept hold pins only.
  BaselineBook load_book(std::vector<std::string>* warnings = nullptr) const;
  void save_book(const BaselineBook& book) const;   // atomic; throws Error

 private:
  std::filesystem::path root_;
};

}  // namespace mb

// Where runs live between launches: one run-record JSON file per run (written atomically)
// plus the baseline pins, in the per-user data folder or in $MIRRORBENCH_HOME when set.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "records/run_record.h"

namespace mb {

class RunStore {
 public:
  explicit RunStore(std::filesystem::path root);

  // $MIRRORBENCH_HOME if set (tests, portable installs), else QStandardPaths::AppDataLocation.
  static std::filesystem::path default_root();

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path runs_dir() const { return root_ / "runs"; }
  std::filesystem::path file_for(const std::string& id) const;

  struct Loaded {
    std::vector<RunRecord> runs;        // oldest first
    std::vector<std::string> warnings;  // one per file that could not be read
  };
  // Reads every *.json in runs_dir(); a corrupt or foreign file is skipped with a warning.
  Loaded load_runs() const;

  void save(const RunRecord& record) const;        // atomic; throws Error
  void remove(const std::string& id) const;        // missing file is not an error

  // Baseline pins: comparison key -> run id.
  std::map<std::string, std::string> load_pins(std::vector<std::string>* warnings = nullptr) const;
  void save_pins(const std::map<std::string, std::string>& pins) const;   // atomic; throws Error

 private:
  std::filesystem::path root_;
};

}  // namespace mb

// `mirrorbench-cli compare RUN`: a stored run against its baseline - the same baseline choice
// (pins, then the latest completed single-device run of the same configuration) and the same
// verdict as the workbench's comparison card (core/experiment/comparison_report.h).
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "experiment/comparison_report.h"
#include "plan_runner.h"
#include "util/error.h"

namespace mb::cli {
namespace {

struct CompareFlags {
  std::string run, history;
};
CompareFlags& flags() {
  static CompareFlags f;
  return f;
}

void add_compare_options(CLI::App& sub, Options&) {
  sub.add_option("run", flags().run, "a run record (.json file) or the id of a run in the history")
      ->required()
      ->type_name("RUN");
  sub.add_option("--history", flags().history, "the runs to find its baseline among (default: the workbench's)")
      ->check(not_an_option())
      ->type_name("DIR");
}

int run_compare(const Options&) {
  const RunStore store = history_store(flags().history);
  std::error_code ec;
  const std::filesystem::path as_file = flags().run;
  const bool is_file = std::filesystem::is_regular_file(as_file, ec);
  MB_CHECK(is_file || std::filesystem::is_regular_file(store.file_for(flags().run), ec), ConfigError,
           "compare: '{}' is neither a run record file nor a run id in {}", flags().run, store.runs_dir().string());
  const RunRecord run = read_run_json(is_file ? as_file : store.file_for(flags().run));
  std::vector<std::string> warnings;
  const RunComparison c = compare_with_baseline(store, run, &warnings);
  for (const auto& w : warnings) fmt::print(stderr, "mirrorbench-cli: skipped {}\n", w);
  fmt::print("{}", comparison_text(run, c));
  return 0;
}

[[maybe_unused]] const bool registered = register_command(
    {"compare", "compare a stored run with its baseline (the workbench's verdict)", 13, add_compare_options,
     run_compare});

}  // namespace
}  // namespace mb::cli

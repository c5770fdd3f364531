// `mirrorbench-cli reference`: the classic task in one command - the reference model, 5 epochs,
// global batch 128, the whole data set, on one device (the baseline) and then on the chosen
// devices, with the task's two criteria judged as the workbench judges them.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "experiment/comparison_report.h"
#include "options/train_flags.h"
#include "plan_runner.h"
#include "records/run_record.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb::cli {
namespace {

struct ReferenceFlags {
  DeviceList devices = cpu_replicas(2);   // "1 vs N": N defaults to 2
  std::string history;
};
ReferenceFlags& flags() {
  static ReferenceFlags f;
  return f;
}

void add_reference_options(CLI::App& sub, Options& o) {
  // The devices to compare have their own default (cpu:2) here, so not the table's flag.
  sub.add_option_function<std::string>(
         "--devices", [](const std::string& text) { flags().devices = parse_devices(text); },
         "the devices to compare with one (default cpu:2)")
      ->check(not_an_option())
      ->type_name("LIST");
  options::add_train_flags(sub, o.train, {{"data_dir", "data set: IDX folder, .npz, NumPy or CIFAR-10 folder (default: Fashion-MNIST)"}});
  sub.add_option("--history", flags().history, "save both runs here (default: the workbench's history)")
      ->check(not_an_option())
      ->type_name("DIR");
  sub.add_option("--json", o.json_out, "write the multi-device run's record")->check(not_an_option())->type_name("FILE");
}

int run_reference(const Options& o) {
  PlanRequest request;
  request.kind = PlanKind::Reference;
  request.config = reference_config(o.train, flags().devices);
  const Plan plan = make_plan(request);   // every problem before any training
  const PlanOutcome ran = run_plan(plan, history_store(flags().history));
  if (ran.records.size() < 2) {
    fmt::print(stderr, "mirrorbench-cli: the reference experiment did not finish ({})\n",
               ran.stopped ? "stopped" : ran.records.empty() ? "no run" : ran.records.back().error);
    return 1;
  }
  const RunRecord& run = ran.records[1];
  if (!o.json_out.empty()) write_run_json(run, o.json_out);
  fmt::print("\n{}", comparison_text(run, compare_runs(ran.records[0], run)));
  return run.status == RunStatus::Failed ? 1 : 0;
}

[[maybe_unused]] const bool registered = register_command(
    {"reference", "the classic task: one device, then --devices, judged by its two criteria", 11,
     add_reference_options, run_reference});

}  // namespace
}  // namespace mb::cli

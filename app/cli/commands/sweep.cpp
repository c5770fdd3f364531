// `mirrorbench-cli sweep`: the seed's bonus experiment in one command - the reference model
// over several global batch sizes, with and without linear learning-rate scaling, and the time
// to reach a target validation accuracy for each (core/experiment/sweep.h, shared with the
// workbench's Sweep plan).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_options.h"
#include "experiment/sweep.h"
#include "plan_runner.h"
#include "trainer/mirrored_trainer.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb::cli {
namespace {

struct SweepFlags {
  std::vector<std::string> batches;
  double target = 0.85;
  std::string history;
};
SweepFlags& flags() {
  static SweepFlags f;
  return f;
}

void add_sweep_options(CLI::App& sub, Options& o) {
  TrainConfig& t = o.train;
  sub.add_option("--data", t.data_dir, "IDX folder (default: Fashion-MNIST)")->check(not_an_option())->type_name("DIR");
  sub.add_option("--devices", t.devices, "the devices of every configuration (default cpu:1)")
      ->check(not_an_option())
      ->type_name("LIST");
  sub.add_option("--batches", flags().batches, "global batch sizes (default 64,128,256,512,1024)")
      ->delimiter(',')
      ->transform(integer_in(1, 65536))
      ->type_name("B,B,...");
  sub.add_option("--lr", t.lr, "the learning rate at batch 128 (scaled linearly for the others)")
      ->transform(positive_real_up_to(1e6))
      ->type_name("X");
  sub.add_option("--epochs", t.epochs, "epochs per configuration (default 5)")->transform(integer_in(1, 100000))->type_name("E");
  sub.add_option("--target", flags().target, "validation accuracy to reach (default 0.85)")
      ->transform(positive_real_up_to(1.0))
      ->type_name("ACC");
  sub.add_option("--limit-train", t.limit_train, "use only the first N training images")
      ->transform(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->type_name("N");
  sub.add_option("--seed", t.seed, "seed for weights and data order")->transform(unsigned_integer())->type_name("S");
  sub.add_option("--history", flags().history, "save the runs here (default: the workbench's history)")
      ->check(not_an_option())
      ->type_name("DIR");
  sub.add_option("--json", o.json_out, "write one object per configuration")->check(not_an_option())->type_name("FILE");
  sub.add_option("--csv", o.csv_out, "write the table as CSV")->check(not_an_option())->type_name("FILE");
}

int run_sweep(const Options& o) {
  SweepOptions s;
  s.base = o.train;
  if (!flags().batches.empty()) {
    s.batches.clear();
    for (const auto& b : flags().batches) s.batches.push_back(std::stoll(b));
  }
  s.target_val_acc = flags().target;
  const auto points = sweep_points(s);   // impossible lists are reported before any training
  const auto plan = make_sweep_plan(s);
  for (const auto& p : plan) check_train_config(p.config);
  fmt::print("sweep: {} configuration(s) on {}, {} epoch(s) each, target {:.1f} % validation accuracy\n",
             plan.size(), s.base.devices, s.base.epochs, 100 * s.target_val_acc);
  const PlanRun ran = run_plan(plan, history_store(flags().history));
  const SweepSummary summary = summarize_sweep(points, ran.records, s.target_val_acc);
  fmt::print("\n{}", sweep_text(summary));
  if (!o.json_out.empty()) write_file_atomic(o.json_out, to_json(summary).dump(2) + "\n");
  if (!o.csv_out.empty()) write_file_atomic(o.csv_out, sweep_csv(summary));
  if (ran.stopped) fmt::print("stopped after {} of {} configuration(s)\n", ran.records.size(), plan.size());
  for (const auto& r : ran.records)
    if (r.status == RunStatus::Failed) {
      fmt::print(stderr, "mirrorbench-cli: a configuration failed: {}\n", r.error);
      return 1;
    }
  return 0;
}

[[maybe_unused]] const bool registered = register_command(
    {"sweep", "train over several batch sizes, with and without lr scaling; time to a target accuracy", 12,
     add_sweep_options, run_sweep});

}  // namespace
}  // namespace mb::cli

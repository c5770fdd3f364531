// `mirrorbench-cli sweep`: the seed's bonus experiment in one command - the reference model
// over several global batch sizes, with and without linear learning-rate scaling, and the time
// to reach a target validation accuracy for each - or, with --models or --links, each what-if
// model or simulated link on 1 to N replicas and its speed-up (core/experiment/sweep.h, shared
// with the workbench's Sweep plan).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_options.h"
#include "experiment/sweep.h"
#include "options/train_flags.h"
#include "plan_runner.h"
#include "util/atomic_file.h"
#include "config/train_config.h"
#include "util/error.h"

namespace mb::cli {
namespace {

struct SweepFlags {
  std::vector<std::string> batches;
  std::string models, links, remedies;
  double target = 0.85;
  std::string history;
};
SweepFlags& flags() {
  static SweepFlags f;
  return f;
}

void add_sweep_options(CLI::App& sub, Options& o) {
  options::add_train_flags(sub, o.train,
                           {{"data_dir", "data set: IDX folder, .npz, NumPy, CIFAR-10 or image folder (default: Fashion-MNIST)"},
                            {"devices", "the devices of every configuration (default cpu:1); --models, --links: 1 to N of them"},
                            {"model", "the model of a batch or link sweep (default reference)"},
                            {"lr", "the learning rate at batch 128 (scaled linearly for the others)"},
                            {"epochs", "epochs per configuration (default 5)"},
                            {"limit_train", "use only the first N training images"},
                            {"simulated_link", "the simulated link of a remedy sweep (GBIT[:US]), and of every "
                                               "configuration of a batch or model sweep"},
                            {"input_latency", "the simulated input latency of every configuration (MS per image): "
                                              "what a sweep of loaders:N remedies overlaps"},
                            {"input_cpu", "the simulated input CPU cost of every configuration (MS per image)"},
                            {"loaders", "the loader threads per replica of every configuration (a loaders:N remedy "
                                        "replaces it)"},
                            {"prefetch", "the steps the loaders prepare ahead (a prefetch:STEPS remedy replaces it)"},
                            {"seed"}});
  sub.add_option("--batches", flags().batches, "global batch sizes (default 64,128,256,512,1024)")
      ->delimiter(',')
      ->transform(integer_in(1, kMaxGlobalBatch))
      ->type_name("B,B,...");
  sub.add_option("--models", flags().models,
                 "sweep the model instead: each of these on 1 to N replicas of --devices, e.g. "
                 "reference,dense:1024,dense:4096")
      ->type_name("M,M,...");
  sub.add_option("--links", flags().links,
                 "sweep a simulated link instead (CPU replicas): each GBIT[:US] or off on 2 to N replicas, against one "
                 "replica, e.g. off,100:3,10:25,1:50")
      ->type_name("L,L,...");
  sub.add_option("--remedies", flags().remedies,
                 "sweep the remedies for communication instead (CPU replicas): one replica, then --devices bare and "
                 "with each of accumulate:K, bf16, fp16, powersgd:RANK, bucket:MB (several joined by '+'), over "
                 "--simulated-link, e.g. accumulate:8,bf16,bucket:25; or the input pipeline's, loaders:N and "
                 "prefetch:STEPS, over --input-latency or --input-cpu, e.g. loaders:2,loaders:4,loaders:8+prefetch:8")
      ->type_name("R,R,...");
  sub.add_option("--target", flags().target, "validation accuracy to reach (default 0.85)")
      ->transform(positive_real_up_to(1.0))
      ->type_name("ACC");
  sub.add_option("--history", flags().history, "save the runs here (default: the workbench's history)")
      ->check(not_an_option())
      ->type_name("DIR");
  sub.add_option("--json", o.json_out, "write one object per configuration")->check(not_an_option())->type_name("FILE");
  sub.add_option("--csv", o.csv_out, "write the table as CSV")->check(not_an_option())->type_name("FILE");
}

int run_sweep(const Options& o) {
  PlanRequest request;
  request.kind = PlanKind::Sweep;
  request.config = o.train;
  if (!flags().batches.empty()) {
    request.sweep.batches.clear();
    for (const auto& b : flags().batches) request.sweep.batches.push_back(std::stoll(b));
  }
  MB_CHECK(int(!flags().batches.empty()) + int(!flags().models.empty()) + int(!flags().links.empty()) +
                   int(!flags().remedies.empty()) <=
               1,
           ConfigError, "sweep one thing: give one of --batches, --models, --links and --remedies");
  if (!flags().models.empty()) {
    request.sweep.axis = SweepAxis::Model;
    request.sweep.models = parse_sweep_models(flags().models);
  }
  if (!flags().links.empty()) {
    request.sweep.axis = SweepAxis::Link;
    request.sweep.links = parse_sweep_links(flags().links);
  }
  if (!flags().remedies.empty()) {
    request.sweep.axis = SweepAxis::Remedy;
    request.sweep.remedies = parse_sweep_remedies(flags().remedies);
  }
  request.sweep.target_val_acc = flags().target;
  const Plan plan = make_plan(request);   // impossible lists and configurations before any training
  request.sweep.base = request.config;
  const auto points = sweep_points(request.sweep);
  fmt::print("sweep over the {}: {} configuration(s) on {}, {} epoch(s) each, target {:.1f} % validation accuracy\n",
             to_string(request.sweep.axis), plan.runs.size(), format_devices(o.train.devices), o.train.epochs,
             100 * flags().target);
  const PlanOutcome ran = run_plan(plan, history_store(flags().history));
  const SweepSummary summary = summarize_sweep(points, ran.records, flags().target, request.sweep.axis);
  fmt::print("\n{}", sweep_text(summary));
  if (!o.json_out.empty()) write_file_atomic(o.json_out, to_json(summary).dump(2) + "\n");
  if (!o.csv_out.empty()) write_file_atomic(o.csv_out, sweep_csv(summary));
  if (ran.stopped) fmt::print("stopped after {} of {} configuration(s)\n", ran.records.size(), plan.runs.size());
  for (const auto& r : ran.records)
    if (r.status == RunStatus::Failed) {
      fmt::print(stderr, "mirrorbench-cli: a configuration failed: {}\n", r.error);
      return 1;
    }
  return 0;
}

[[maybe_unused]] const bool registered = register_command(
    {"sweep", "train over several batch sizes (with and without lr scaling), models, links or remedies; time to a target, speed-up",
     12,
     add_sweep_options, run_sweep});

}  // namespace
}  // namespace mb::cli

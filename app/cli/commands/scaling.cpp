// `mirrorbench-cli scaling`: calibrates this machine in well under a minute (lock-step compute
// of 1..cores CPU replicas at several batches, a size sweep of the all-reduce) and predicts
// epoch time, speedup, efficiency and communication share for 1..N replicas, in global- and
// per-replica-batch mode, and for more machines given a link (--link-gbps, --link-latency-us):
// as many as the replicas need, or the replicas spread over --machines N.
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/model_text.h"
#include "backends/registry.h"
#include "config/train_options.h"
#include "cli_options.h"
#include "experiment/calibrate.h"
#include "experiment/scaling_model.h"
#include "options/train_flags.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace mb::cli {
namespace {

void add_scaling_options(CLI::App& sub, Options& o) {
  options::add_train_flags(sub, o.train,
                           {{"devices", "the kind of replica to calibrate: cpu (CPU replicas)"},
                            {"batch", "global batch (global mode) and per-replica batch (per-replica mode)"},
                            {"backend", "CPU kernels: auto, onednn, reference"},
                            {"model", "the model to calibrate and predict: a preset, a layer text or a Keras file"},
                            {"simulated_link", "predict with a simulated link between this machine's replicas, as "
                                               "train --simulated-link makes it (GBIT[:US])"},
                            {"balance", "predict balanced shares (train --balance): the replicas' throughputs add "
                                        "instead of the slowest setting the pace"},
                            {"slow_replica", "predict with a simulated straggler, as train --slow-replica makes it: "
                                             "replica RANK computes FACTOR times slower"},
                            {"accumulate", "predict with gradient accumulation, as train --accumulate makes it: one "
                                           "gradient all-reduce every K steps"},
                            {"allreduce_dtype", "predict with a compressed all-reduce, as train --allreduce-dtype makes "
                                                "it: half the bytes on a link (fp32, bf16, fp16)"},
                            {"bucket_mb", "predict overlap in buckets, as train --bucket-mb makes it: a simulated "
                                          "link's wire time hidden under the backward pass"},
                            {"powersgd", "predict with PowerSGD, as train --powersgd makes it: two exchanges of "
                                         "rank-RANK factors in place of the gradient"}});
  sub.add_option("--max-replicas", o.max_replicas, "predict for 1..N replicas (default: twice the cores here)")
      ->transform(integer_in(1, 4096))
      ->type_name("N");
  sub.add_option("--link-gbps", o.link_gbps, "predict replicas beyond this machine on more machines over this link")
      ->transform(positive_real_up_to(1e5))
      ->type_name("GBITS");
  sub.add_option("--link-latency-us", o.link_latency_us, "the link's latency per message, microseconds (default 20)")
      ->transform(positive_real_up_to(1e6))
      ->type_name("US");
  sub.add_option("--machines", o.machines,
                 "spread the replicas over N machines joined by the link (default: as many as they need, "
                 "this machine's cores each)")
      ->transform(integer_in(1, 4096))
      ->type_name("N");
  sub.add_option("--round-images", o.round_images,
                 "images per replica in each timed round of a calibration point (5 rounds, the median kept; "
                 "the PowerSGD and accumulation rounds scale with it); fewer is quicker and noisier")
      ->transform(integer_in(0, 1 << 20))
      ->type_name("N");
  sub.add_option("--calibration", o.calibration_in,
                 "predict from this calibration (the \"calibration\" of an earlier --json, or the workbench's "
                 "calibration.json) instead of measuring this machine")
      ->check(not_an_option())
      ->type_name("FILE");
  sub.add_option("--json", o.json_out, "write {\"calibration\": ..., \"predictions\": [...]}")
      ->check(not_an_option())
      ->type_name("FILE");
  sub.add_option("--csv", o.csv_out, "write the predictions as CSV")->check(not_an_option())->type_name("FILE");
}

Calibration measure(const Options& o) {
  CalibrateOptions copt;
  copt.backend = o.train.backend;
  copt.model = o.train.model;
  copt.round_images = o.round_images;
  fmt::print("calibrating {} replicas of {} on this machine (takes well under a minute) ...\n",
             format_devices(o.train.devices), o.train.model.name());
  std::fflush(stdout);
  return calibrate_cpu(copt, [](const std::string& line) {
    fmt::print("  {}\n", line);
    std::fflush(stdout);
  });
}

// A --json document of this command (its "calibration") or a bare calibration.
Calibration read_calibration(const std::string& path) {
  std::ifstream in(path);
  MB_CHECK(in.good(), DataError, "--calibration: cannot read {}", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("--calibration {}: not JSON ({})", path, e.what()));
  }
  try {
    return calibration_from_json(j.contains("calibration") ? j.at("calibration") : j);
  } catch (const DataError& e) {
    throw DataError(fmt::format("--calibration {}: {}", path, e.what()));
  }
}

int run_scaling(const Options& o) {
  MB_CHECK(device_kind(o.train.devices) == DeviceKind::Cpu, ConfigError,
           "scaling calibrates CPU replicas (--devices cpu); measuring GPUs needs the device sweep of "
           "bench/gpu_check.sh");
  resolve_backend(DeviceKind::Cpu, o.train.backend);   // a GPU backend is reported before a minute of measuring
  MB_CHECK(o.machines <= 1 || o.link_gbps > 0, ConfigError,
           "--machines {} needs the link between them: give --link-gbps (and --link-latency-us)", o.machines);

  const Calibration cal = o.calibration_in.empty() ? measure(o) : read_calibration(o.calibration_in);
  PredictOptions popt;
  popt.max_replicas = o.max_replicas > 0 ? o.max_replicas : 2 * cal.cores;
  popt.batch = o.train.batch;
  popt.link_gbps = o.link_gbps;
  popt.link_latency_s = o.link_latency_us * 1e-6;
  popt.machines = o.machines;
  popt.scenario = o.train.scenario;
  // A calibration read from a file timed the compute of the model whose gradient it names.
  const std::string timed = timed_model(cal);
  MB_CHECK(timed == model_text(o.train.model), ConfigError, "--calibration {}: it timed {}, not --model {}",
           o.calibration_in, timed.empty() ? std::string("an unknown model") : model_name(model_from_text(timed)),
           o.train.model.name());
  const auto predictions = predict_scaling(cal, popt);

  std::string scenario = popt.scenario.balanced() ? "" : ", lock-step";
  for (const std::string& tag : scenario_tags(popt.scenario)) scenario += ", " + tag;
  fmt::print("\npredicted epoch of {} images of {} ({:.1f} MB per all-reduce) on {} ({} core(s) here), batch {}{}:\n",
             cal.train_size, o.train.model.name(), cal.gradient_bytes * 1e-6, cal.device, cal.cores, popt.batch,
             scenario);
  fmt::print("{:>8} {:>12} {:>9} {:>10} {:>9} {:>10} {:>11}  {}\n", "replicas", "mode", "machines", "epoch s",
             "speedup", "efficiency", "comm share", "note");
  for (const auto& p : predictions)
    fmt::print("{:>8} {:>12} {:>9} {:>10.2f} {:>9.2f} {:>9.0f}% {:>10.1f}%  {}\n", p.replicas, to_string(p.mode), p.machines,
               p.epoch_s, p.speedup, 100 * p.efficiency, 100 * p.comm_share, p.note);

  nlohmann::json doc = {{"calibration", to_json(cal)}, {"predictions", nlohmann::json::array()}};
  for (const auto& p : predictions) doc["predictions"].push_back(to_json(p));
  if (!o.json_out.empty()) write_file_atomic(o.json_out, doc.dump(2) + "\n");
  if (!o.csv_out.empty()) write_file_atomic(o.csv_out, predictions_csv(predictions));
  return 0;
}

[[maybe_unused]] const bool registered = register_command(
    {"scaling", "calibrate this machine and predict epoch time and speedup for 1..N replicas", 15,
     add_scaling_options, run_scaling});

}  // namespace
}  // namespace mb::cli

// `mirrorbench-cli train`: trains the reference CNN with mirrored replicas, one line per
// epoch, and writes the requested outputs; SIGINT, SIGTERM and SIGHUP stop it at the next
// step with every output still written. Started by mpirun or srun, it is one process of a
// run across processes: process 0 prints and writes; a failure anywhere ends every process.
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "errors.h"
#include "launch.h"
#include "outputs.h"
#include "records/chrome_trace.h"
#include "util/error.h"
#include "progress_printer.h"
#include "signals.h"
#include "trainer/mirrored_trainer.h"
#include "trainer/progress_events.h"

namespace mb::cli {
namespace {

void add_train_options(CLI::App& sub, Options& o) {
  TrainConfig& t = o.train;
  constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();
  sub.add_option("--data", t.data_dir, "IDX folder in the MNIST layout (default: $MIRRORBENCH_DATA or Fashion-MNIST)")
      ->check(not_an_option())
      ->type_name("DIR");
  sub.add_option("--devices", t.devices, "cpu:N (N CPU replicas, one core each) or cuda:0,cuda:1")
      ->check(not_an_option())
      ->type_name("LIST");
  sub.add_option("--batch", t.batch, "global batch size, split across replicas")
      ->transform(integer_in(1, 65536))
      ->type_name("B");
  sub.add_flag("--per-replica-batch", t.per_replica_batch, "B is per replica: global batch = B x replicas");
  sub.add_option("--lr", t.lr, "Adam learning rate")->transform(positive_real_up_to(1e6))->type_name("X");
  sub.add_flag("--scale-lr", t.scale_lr, "multiply the learning rate by the replica count");
  sub.add_option("--epochs", t.epochs, "epochs")->transform(integer_in(1, 100000))->type_name("E");
  sub.add_option("--seed", t.seed, "seed for weights and data order")->transform(unsigned_integer())->type_name("S");
  sub.add_option("--limit-train", t.limit_train, "use only the first N training images (0: all)")
      ->transform(integer_in(0, kMaxI64))
      ->type_name("N");
  sub.add_option("--limit-val", t.limit_val, "use only the first N validation images (0: all)")
      ->transform(integer_in(0, kMaxI64))
      ->type_name("N");
  sub.add_option("--backend", t.backend, "CPU kernels: auto, onednn, reference")
      ->check(not_an_option())
      ->type_name("NAME");
  sub.add_option("--precision", t.precision,
                 "fp32 (default), or tf32 for GPU replicas: tensor-core convolutions and GEMMs")
      ->check(CLI::IsMember({"fp32", "tf32"}))
      ->type_name("P");
  sub.add_option("--json", o.json_out, "write the run record as JSON")->check(not_an_option())->type_name("FILE");
  sub.add_option("--csv", o.csv_out, "write the per-epoch metrics as CSV")->check(not_an_option())->type_name("FILE");
  sub.add_option("--save", o.save_out, "write the trained weights as safetensors (PyTorch names and layouts)")
      ->check(not_an_option())
      ->type_name("FILE");
  sub.add_option("--trace", o.trace_out,
                 "write a Chrome trace of sampled steps (open in chrome://tracing or ui.perfetto.dev): one track "
                 "per replica, forward/backward/wait/all-reduce/optimizer")
      ->check(not_an_option())
      ->type_name("FILE");
  sub.add_option_function<std::string>(
         "--slow-replica",
         [&t](const std::string& spec) {
           const auto colon = spec.find(':');
           MB_CHECK(colon != std::string::npos, ConfigError,
                    "--slow-replica expects RANK:FACTOR (e.g. 1:2 makes replica 1 twice as slow), got '{}'", spec);
           const std::string rank = spec.substr(0, colon), factor = spec.substr(colon + 1);
           int r = -1;
           const auto [end, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), r);
           MB_CHECK(ec == std::errc() && end == rank.data() + rank.size() && r >= 0, ConfigError,
                    "--slow-replica: '{}' is not a replica number", rank);
           std::size_t used = 0;
           double f = 0;
           try {
             f = std::stod(factor, &used);
           } catch (const std::exception&) {
             used = 0;
           }
           MB_CHECK(used == factor.size() && !factor.empty() && std::isfinite(f) && f >= 1 && f <= 100, ConfigError,
                    "--slow-replica: the factor must be a number in 1..100, got '{}'", factor);
           t.slow_replica = r;
           t.slow_factor = f;
         },
         "simulated straggler for demonstrations: replica RANK computes FACTOR times slower (CPU replicas)")
      ->type_name("RANK:FACTOR");
  sub.add_option("--pace", t.step_delay_s,
                 "teaching pace: every step lasts at least S seconds (e.g. 1) and is reported in detail")
      ->transform(positive_real_up_to(60))
      ->type_name("S");
  sub.add_flag_function(
         "--no-breakdown", [&t](int64_t) { t.time_phases = false; },
         "do not time the phases of each step (only to measure what the breakdown itself costs)");
  sub.add_option("--progress", o.progress,
                 "text: a progress bar and one line per epoch; json: one JSON event per line (start, step, epoch, "
                 "log, end) for programs that follow the run")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT");
  sub.add_option("--timeout", o.timeout_s,
                 "seconds any wait for another replica, another process (mpirun, srun) or a GPU may last before the "
                 "run fails naming the ones that did not answer or finish")
      ->transform(positive_real_up_to(86400))
      ->type_name("S");
}

// What the JSON stream's end event and the outputs need, from process 0 only.
void finish_primary(const Options& o, const MirroredTrainer& trainer, const RunRecord& record, int stopped_by,
                    int& exit_code) {
  const std::span<const float> params = trainer.final_params();
  const bool json = o.progress == "json";
  std::FILE* info = json ? stderr : stdout;   // the JSON stream carries events only
  if (!record.epochs.empty())
    fmt::print(info, "mean epoch time {:.2f} s, best val_acc {:.4f}, replicas in sync: {}\n", record.mean_epoch_time(),
               record.best_val_acc(), record.replicas_in_sync ? "yes" : "NO");
  if (record.status == RunStatus::Stopped)
    fmt::print(info, "stopped by {} after {} epoch(s)\n",
               stopped_by == SIGINT ? "the user" : StopOnSignals::name(stopped_by), record.epochs.size());
  std::fflush(info);
  const RunOutputs outputs{o.save_out, o.json_out, o.csv_out};
  int failed_outputs = report_outputs(write_outputs(outputs, record, params), record.id, info, stderr);
  if (!o.trace_out.empty()) {
    try {
      if (trainer.trace().empty()) throw Error("the run failed before its steps could be gathered");
      write_chrome_trace(o.trace_out, record, trainer.trace());
      fmt::print(info, "run {}: wrote --trace {} (open it in chrome://tracing or https://ui.perfetto.dev)\n",
                 record.id, o.trace_out);
    } catch (const std::exception& e) {
      fmt::print(stderr, "mirrorbench-cli: --trace {} was not written: {}\n", o.trace_out, e.what());
      ++failed_outputs;
    }
  }
  if (json) {
    ProgressEvent end;
    end.kind = ProgressEvent::Kind::End;
    end.record = record;
    fmt::print("{}\n", to_json_line(end));
    std::fflush(stdout);
  }
  if (failed_outputs > 0) exit_code = 1;
}

int train(const Options& o, Launch& launch) {
  check_train_config(o.train, launch.processes());   // argument mistakes before seconds of data loading
  // Only process 0 writes, so only it checks the paths (they may not exist on other hosts).
  if (launch.primary()) {
    check_writable(RunOutputs{o.save_out, o.json_out, o.csv_out});
    check_writable("--trace", o.trace_out);
  }
  TrainConfig config = o.train;
  config.trace = !o.trace_out.empty();
  config.timeout_s = o.timeout_s;
  const std::filesystem::path dir =
      o.train.data_dir.empty() ? default_data_dir() : std::filesystem::path(o.train.data_dir);
  auto data = std::make_shared<DataSplit>(load_idx_dir(dir));
  MirroredTrainer trainer(config, data, launch.link());   // collective: same options and data everywhere

  ProgressPrinter printer(stdout);
  TrainObserver observer;
  if (o.progress == "json") {
    observer = json_progress_observer(stdout);
  } else {
    observer.on_start = [&](const RunConfig& c) { printer.start(c); };
    observer.on_step = [&](const StepProgress& p) { printer.step(p); };
    observer.on_epoch = [&](const EpochMetrics& m) { printer.epoch(m, o.train.epochs); };
  }

  // The guard stays up while the outputs are written: a signal then does not cut them short
  // (only a second one ends the process).
  StopOnSignals stop([](void* t) { static_cast<MirroredTrainer*>(t)->request_stop(); }, &trainer);
  // A replica thread stuck inside a driver after a failure: run() cannot return, so the
  // outputs are written here and the process ends (every process, under a launcher).
  observer.on_stuck = [&](const RunRecord& failed) {
    int code = 1;
    if (trainer.is_primary()) finish_primary(o, trainer, failed, stop.received(), code);
    fmt::print(stderr, "mirrorbench-cli: {}training failed: {}\n", launch.primary() ? "" : launch.describe() + ": ",
               failed.error);
    std::fflush(nullptr);
    if (launch.multi_process()) launch.finish(1);
    std::_Exit(1);   // no destructors, no atexit handlers: they would wait for the stuck thread
  };
  const RunRecord record = trainer.run(observer);
  int exit_code = record.status == RunStatus::Failed ? 1 : 0;
  if (trainer.is_primary()) finish_primary(o, trainer, record, stop.received(), exit_code);
  if (record.status == RunStatus::Failed)
    fmt::print(stderr, "mirrorbench-cli: {}training failed: {}\n",
               launch.primary() ? "" : launch.describe() + ": ", record.error);
  return exit_code;
}

int run_train(const Options& o) {
  Launch launch = Launch::join(o.timeout_s);
  int exit_code = 1;
  try {
    exit_code = train(o, launch);
  } catch (const std::exception& e) {
    // Bad data on this host, a device that would not start: say so here, and tell the other
    // processes, which would otherwise wait for this one until --timeout.
    exit_code = report_error(e, launch.primary() ? "" : launch.describe());
    launch.fail(e.what());
  }
  return launch.finish(exit_code);
}

[[maybe_unused]] const bool registered = register_command({"train", "train the reference CNN, one line per epoch", 10,
                                          add_train_options, run_train});

}  // namespace
}  // namespace mb::cli

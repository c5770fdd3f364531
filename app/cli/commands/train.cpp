// `mirrorbench-cli train`: trains the reference CNN with mirrored replicas, one line per
// epoch, and writes the requested outputs; SIGINT, SIGTERM and SIGHUP stop it at the next
// step with every output still written. Started by mpirun or srun, it is one process of a
// run across processes: process 0 prints and writes; a failure anywhere ends every process.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "data/data_source.h"
#include "data/synthetic.h"
#include "errors.h"
#include "launch.h"
#include "options/train_flags.h"
#include "outputs.h"
#include "records/chrome_trace.h"
#include "util/error.h"
#include "progress_printer.h"
#include "signals.h"
#include "trainer/mirrored_trainer.h"
#include "trainer/progress_events.h"
#include "trainer/run_check.h"

namespace mb::cli {
namespace {

// The training options (the option table), then what this command writes.
void add_train_options(CLI::App& sub, Options& o) {
  options::add_train_flags(sub, o.train);
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
  sub.add_option("--progress", o.progress,
                 "text: a progress bar and one line per epoch; json: one JSON event per line (start, step, epoch, "
                 "log, end) for programs that follow the run")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT");
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
  TrainConfig config = o.train;
  config.trace = !o.trace_out.empty();
  // Argument mistakes before seconds of data loading (the machine is checked by the trainer).
  require_runnable(config, RunSite{launch.processes(), false, nullptr});
  // Only process 0 writes, so only it checks the paths (they may not exist on other hosts).
  if (launch.primary()) {
    check_writable(RunOutputs{o.save_out, o.json_out, o.csv_out});
    check_writable("--trace", o.trace_out);
  }
  const auto load_start = std::chrono::steady_clock::now();
  auto data = std::make_shared<DataSplit>(load_data_source(o.train.data_dir));
  if (launch.primary()) {
    // How long the data took to read (and, for image folders, to decode): an input pipeline's
    // first question.
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
    fmt::print(o.progress == "json" ? stderr : stdout, "data {}, read in {:.2f} s ({:.0f} images/s)\n",
               data_summary(*data, data_format(o.train.data_dir)), s,
               double(data->train.count + data->val.count) / std::max(s, 1e-9));
    std::fflush(stdout);
  }
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
  Launch launch = Launch::join(o.train.timeout_s);
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

// `mirrorbench-cli train`: trains the reference CNN with mirrored replicas, one line per
// epoch, and writes the requested outputs; SIGINT, SIGTERM and SIGHUP stop it at the next
// step with every output still written. Started by mpirun or srun, it is one process of a
// run across processes: process 0 prints and writes; a failure anywhere ends every process.
#include <csignal>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli_options.h"
#include "errors.h"
#include "launch.h"
#include "outputs.h"
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
  sub.add_option("--json", o.json_out, "write the run record as JSON")->check(not_an_option())->type_name("FILE");
  sub.add_option("--csv", o.csv_out, "write the per-epoch metrics as CSV")->check(not_an_option())->type_name("FILE");
  sub.add_option("--save", o.save_out, "write the trained weights as safetensors (PyTorch names and layouts)")
      ->check(not_an_option())
      ->type_name("FILE");
  sub.add_option("--progress", o.progress,
                 "text: a progress bar and one line per epoch; json: one JSON event per line (start, step, epoch, "
                 "log, end) for programs that follow the run")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT");
  sub.add_option("--timeout", o.timeout_s,
                 "runs across processes (mpirun, srun): seconds a process may wait for the others before the run "
                 "fails naming the ones that did not answer")
      ->transform(positive_real_up_to(86400))
      ->type_name("S");
}

// What the JSON stream's end event and the outputs need, from process 0 only.
void finish_primary(const Options& o, const RunRecord& record, std::span<const float> params, int stopped_by,
                    int& exit_code) {
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
  const int failed_outputs = report_outputs(write_outputs(outputs, record, params), record.id, info, stderr);
  if (json) {
    ProgressEvent end;
    end.kind = ProgressEvent::Kind::End;
    end.record = record;
    fmt::print("{}\n", to_json_line(end));
    std::fflush(stdout);
  }
  if (failed_outputs > 0) exit_code = 1;
}

int train(const Options& o, const Launch& launch) {
  check_train_config(o.train, launch.processes());   // argument mistakes before seconds of data loading
  // Only process 0 writes, so only it checks the paths (they may not exist on other hosts).
  if (launch.primary()) check_writable(RunOutputs{o.save_out, o.json_out, o.csv_out});
  const std::filesystem::path dir =
      o.train.data_dir.empty() ? default_data_dir() : std::filesystem::path(o.train.data_dir);
  auto data = std::make_shared<DataSplit>(load_idx_dir(dir));
  MirroredTrainer trainer(o.train, data, launch.link());   // collective: same options and data everywhere

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
  const RunRecord record = trainer.run(observer);
  int exit_code = record.status == RunStatus::Failed ? 1 : 0;
  if (trainer.is_primary()) finish_primary(o, record, trainer.final_params(), stop.received(), exit_code);
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

// mirrorbench-cli: train, list devices, self-test. Errors: one line on stderr, exit 2 for
// bad arguments or data, 1 for a failed run.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "backends/devices.h"
#include "cli_options.h"
#include "progress_printer.h"
#include "selftest_command.h"
#include "records/checkpoint.h"
#include "records/run_record.h"
#include "trainer/mirrored_trainer.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb::cli {
namespace {

MirroredTrainer* g_trainer = nullptr;  // for Ctrl-C: stop at the next step, keep the record
volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void on_interrupt(int) {
  if (g_interrupted) _exit(130);  // a second Ctrl-C: the user does not want to wait
  g_interrupted = 1;
  if (g_trainer) g_trainer->request_stop();
}

// Fails before training, not after it, when an output file could not be written: the path
// must not be a folder, and its nearest existing folder must take a new file.
void check_writable(const char* flag, const std::string& file) {
  if (file.empty()) return;
  namespace fs = std::filesystem;
  const fs::path path = fs::absolute(file);
  std::error_code ec;
  MB_CHECK(!fs::is_directory(path, ec), ConfigError, "{} {}: is a folder, not a file", flag, file);
  fs::path dir = path.parent_path();
  while (!dir.empty() && !fs::exists(dir, ec) && dir != dir.root_path()) dir = dir.parent_path();
  MB_CHECK(fs::is_directory(dir, ec), ConfigError, "{} {}: {} is not a folder", flag, file, dir.string());
  // Try it: permission bits do not tell (root, read-only mounts, /proc).
  std::string probe = (dir / ".mirrorbench-probe-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  MB_CHECK(fd >= 0, ConfigError, "{} {}: cannot write into {}", flag, file, dir.string());
  close(fd);
  unlink(probe.c_str());
}

int cmd_version() {
  fmt::print("mirrorbench {}\ncomponents: {}\n", version(), components_summary());
  return 0;
}

int cmd_devices() {
  const DeviceInventory inv = query_devices();
  fmt::print("cpu      {} core(s): {}   -> --devices cpu:1 .. cpu:{}\n", inv.cpu_cores, inv.cpu_name, inv.cpu_cores);
  if (inv.gpus.empty()) fmt::print("gpu      none usable: {}\n", inv.gpu_note);
  for (const auto& g : inv.gpus)
    fmt::print("cuda:{}   {}, {:.1f} GiB, compute capability {}.{}\n", g.index, g.name,
               g.memory_bytes / double(1ull << 30), g.cc_major, g.cc_minor);
  return 0;
}

int cmd_train(const Options& o) {
  check_train_config(o.train);  // argument mistakes are reported before seconds of data loading
  check_writable("--json", o.json_out);
  check_writable("--csv", o.csv_out);
  check_writable("--save", o.save_out);
  const std::filesystem::path dir = o.train.data_dir.empty() ? default_data_dir() : std::filesystem::path(o.train.data_dir);
  auto data = std::make_shared<DataSplit>(load_idx_dir(dir));
  MirroredTrainer trainer(o.train, data);

  ProgressPrinter printer(stdout);
  TrainObserver observer;
  observer.on_start = [&](const RunConfig& c) { printer.start(c); };
  observer.on_step = [&](const StepProgress& p) { printer.step(p); };
  observer.on_epoch = [&](const EpochMetrics& m) { printer.epoch(m, o.train.epochs); };

  g_trainer = &trainer;
  std::signal(SIGINT, on_interrupt);
  RunRecord record = trainer.run(observer);
  std::signal(SIGINT, SIG_DFL);
  g_trainer = nullptr;

  if (!o.json_out.empty()) write_run_json(record, o.json_out);
  if (!o.csv_out.empty()) write_runs_csv(std::span<const RunRecord>(&record, 1), o.csv_out);
  if (!o.save_out.empty() && !trainer.final_params().empty())
    save_checkpoint(o.save_out, trainer.final_params(),
                    {{"run_id", record.id}, {"devices", record.config.devices}, {"format", "pt"}});

  if (!record.epochs.empty()) {
    fmt::print("mean epoch time {:.2f} s, best val_acc {:.4f}, replicas in sync: {}\n", record.mean_epoch_time(),
               record.best_val_acc(), record.replicas_in_sync ? "yes" : "NO");
  }
  if (record.status == RunStatus::Failed) {
    fmt::print(stderr, "mirrorbench-cli: training failed: {}\n", record.error);
    return 1;
  }
  if (record.status == RunStatus::Stopped) fmt::print("stopped by the user after {} epoch(s)\n", record.epochs.size());
  return 0;
}

}  // namespace
}  // namespace mb::cli

int main(int argc, char** argv) {
  using namespace mb::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto logger = spdlog::stderr_color_mt("mirrorbench");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  try {
    const Options o = parse(args);
    spdlog::set_level(o.verbose ? spdlog::level::debug : spdlog::level::warn);
    switch (o.command) {
      case Command::Help: fmt::print("{}", usage()); return args.empty() ? 2 : 0;
      case Command::Version: return cmd_version();
      case Command::Devices: return cmd_devices();
      case Command::Selftest: return cmd_selftest();
      case Command::Train: return cmd_train(o);
    }
  } catch (const mb::ConfigError& e) {
    fmt::print(stderr, "mirrorbench-cli: {}\n", e.what());
    return 2;
  } catch (const mb::DataError& e) {
    fmt::print(stderr, "mirrorbench-cli: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "mirrorbench-cli: {}\n", e.what());
    return 1;
  }
  return 0;
}

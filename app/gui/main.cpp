// mirrorbench: the Qt workbench. Without options it opens the window; with --run/--compare/
// --reference/--sweep it drives that same window from the command line (slides, automation):
//   mirrorbench --run --devices cpu:2 --epochs 1 --limit-train 2048
//               --export-png charts.png --export-csv runs.csv --quit
//   mirrorbench --run --processes 2 --devices cpu:1 ...   (2 processes under mpirun)
//   mirrorbench --sweep --devices cpu:2 --batches 64,128 --epochs 1 --limit-train 2048
//               --export-png sweep.png --export-csv sweep.csv --export-json sweep.json --quit
//   mirrorbench --run --pace 1 --limit-train 512 --export-step step.png --quit   (teaching pace)
//   mirrorbench --calibrate --run --slow-replica 1:3 ... --insight --export-insight where.png
// Exit status in scripted mode: 0 all runs completed and exports written, 1 a run failed or
// was stopped, 2 bad command line, 3 an export could not be written.
#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/main_window.h"
#include "app/script_runner.h"
#include "backends/devices.h"
#include "experiment/plans.h"
#include "export/exporter.h"
#include "setup/run_setup_panel.h"
#include "sweep/sweep_panel.h"
#include "util/error.h"
#include "util/system_info.h"

namespace {

int usage_error(const QString& message) {
  std::fprintf(stderr, "mirrorbench: %s\n(see mirrorbench --help)\n", qPrintable(message));
  return mb::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("mirrorbench");
  QApplication::setOrganizationName("mirrorbench");
  QApplication::setApplicationVersion(QString::fromStdString(mb::version()));
  QApplication::setDesktopFileName("mirrorbench");

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Data-parallel (mirrored) CNN training workbench. Scripted use drives the real window; with the "
      "offscreen platform (QT_QPA_PLATFORM=offscreen) it needs no display.");
  parser.addHelpOption();
  parser.addVersionOption();
  const QCommandLineOption run(QStringLiteral("run"), "Start one run with the configuration below.");
  const QCommandLineOption compare(QStringLiteral("compare"), "Run one device (the baseline), then --devices.");
  const QCommandLineOption reference(QStringLiteral("reference"),
                                     "The reference experiment: 5 epochs, batch 128, one device vs --devices "
                                     "(other options given explicitly override the preset).");
  const QCommandLineOption sweep(QStringLiteral("sweep"),
                                 "The batch-size sweep: every --batches size with and without linear learning-rate "
                                 "scaling on --devices; time to reach --target validation accuracy.");
  const QCommandLineOption batches(QStringLiteral("batches"), "Sweep: global batch sizes (default 64,128,256,512,1024).",
                                   "b,b,...");
  const QCommandLineOption target(QStringLiteral("target"), "Sweep: the validation accuracy to reach (default 0.85).",
                                  "acc");
  const QCommandLineOption pace(QStringLiteral("pace"),
                                "Teaching pace for --run: every step lasts at least S seconds (e.g. 1) and the One "
                                "step tab shows each one.", "s");
  const QCommandLineOption devices(QStringLiteral("devices"), "cpu:N or cuda:I[,cuda:J...].", "list");
  const QCommandLineOption epochs(QStringLiteral("epochs"), "Epochs.", "n");
  const QCommandLineOption batch(QStringLiteral("batch"), "Global batch (per replica with --per-replica-batch).", "n");
  const QCommandLineOption per_replica(QStringLiteral("per-replica-batch"), "Batch per replica: global = batch x replicas.");
  const QCommandLineOption lr(QStringLiteral("lr"), "Adam learning rate.", "rate");
  const QCommandLineOption scale_lr(QStringLiteral("scale-lr"), "Scale the learning rate with the replicas.");
  const QCommandLineOption seed(QStringLiteral("seed"), "Seed.", "n");
  const QCommandLineOption limit_train(QStringLiteral("limit-train"), "Train on the first N images.", "n");
  const QCommandLineOption limit_val(QStringLiteral("limit-val"), "Validate on the first N images.", "n");
  const QCommandLineOption backend(QStringLiteral("backend"), "CPU kernels: auto, onednn or reference.", "name");
  const QCommandLineOption data(QStringLiteral("data"), "IDX data folder (default: Fashion-MNIST).", "dir");
  const QCommandLineOption processes(QStringLiteral("processes"),
                                     "Run as N processes under mpirun, each with --devices (cuda:local: one GPU "
                                     "each); 1: in this process.", "n");
  const QCommandLineOption hostfile(QStringLiteral("hostfile"),
                                    "Open MPI hostfile for --processes: the hosts to run on (default: this machine, "
                                    "shared memory and loopback only).", "file");
  const QCommandLineOption slow_replica(QStringLiteral("slow-replica"),
                                        "A simulated straggler (a demonstration): replica R computes F times slower "
                                        "(CPU replicas).", "R:F");
  const QCommandLineOption calibrate(QStringLiteral("calibrate"),
                                     "Calibrate this machine for the scaling predictor first (under a minute).");
  const QCommandLineOption insight(QStringLiteral("insight"), "Show \"Where the time goes\" (for --screenshot).");
  const QCommandLineOption export_insight(QStringLiteral("export-insight"),
                                          "Write \"Where the time goes\" as one PNG when done.", "file");
  const QCommandLineOption export_predictions(QStringLiteral("export-predictions"),
                                              "Write the scaling predictions for the run on display (.json, else CSV).",
                                              "file");
  const QCommandLineOption export_png(QStringLiteral("export-png"), "Write all charts as one PNG when done.", "file");
  const QCommandLineOption export_size(QStringLiteral("export-size"), "PNG size, WIDTHxHEIGHT (default 1600x1000).", "size");
  const QCommandLineOption export_csv(QStringLiteral("export-csv"), "Write the runs' per-epoch data as CSV (the runs of this invocation, else the latest; --sweep: the sweep's table).", "file");
  const QCommandLineOption export_json(QStringLiteral("export-json"), "--sweep: write the sweep as JSON.", "file");
  const QCommandLineOption export_step(QStringLiteral("export-step"),
                                       "Write the One step view (the last step shown) as a PNG (default 1920x1080).",
                                       "file");
  const QCommandLineOption screenshot(QStringLiteral("screenshot"), "Write a screenshot of the window when done.", "file");
  const QCommandLineOption quit(QStringLiteral("quit"), "Exit when done (status 0 on success).");
  parser.addOptions({run, compare, reference, sweep, batches, target, pace, devices, epochs, batch, per_replica, lr,
                     scale_lr, seed, limit_train, limit_val, backend, data, processes, hostfile, slow_replica, calibrate,
                     insight, export_png, export_insight, export_predictions, export_size, export_csv, export_json,
                     export_step, screenshot, quit});
  parser.process(app);   // --help/--version/unknown options exit here

  mb::MainWindow window;
  const bool scripted = parser.isSet(run) || parser.isSet(compare) || parser.isSet(reference) || parser.isSet(sweep) ||
                        parser.isSet(export_png) || parser.isSet(export_csv) || parser.isSet(export_json) ||
                        parser.isSet(export_step) || parser.isSet(screenshot) || parser.isSet(calibrate) ||
                        parser.isSet(export_insight) || parser.isSet(export_predictions) || parser.isSet(quit);
  if (!scripted) {
    window.show();
    return QApplication::exec();
  }
  if (int(parser.isSet(run)) + int(parser.isSet(compare)) + int(parser.isSet(reference)) + int(parser.isSet(sweep)) > 1)
    return usage_error("choose one of --run, --compare, --reference, --sweep");
  if (!parser.isSet(sweep) && (parser.isSet(batches) || parser.isSet(target) || parser.isSet(export_json)))
    return usage_error("--batches, --target and --export-json belong to --sweep");

  mb::ScriptOptions options;
  options.start = parser.isSet(run) || parser.isSet(compare) || parser.isSet(reference) || parser.isSet(sweep);
  options.kind = parser.isSet(compare)     ? mb::PlanKind::Compare
                 : parser.isSet(reference) ? mb::PlanKind::Reference
                 : parser.isSet(sweep)     ? mb::PlanKind::Sweep
                                           : mb::PlanKind::Single;
  if (parser.isSet(batches)) {
    QString problem;
    options.sweep_batches = mb::parse_batches(parser.value(batches), &problem);
    if (!problem.isEmpty()) return usage_error(QStringLiteral("--batches: %1").arg(problem));
  }
  if (parser.isSet(target)) {
    bool ok = false;
    options.sweep_target = parser.value(target).toDouble(&ok);
    if (!ok || !(options.sweep_target > 0 && options.sweep_target <= 1))
      return usage_error("--target is an accuracy in (0, 1], e.g. 0.85");
  }
  mb::TrainConfig& c = options.config;
  c = window.setup_panel()->config();

  QString bad_option;   // the first numeric option that is not a whole number in range
  auto integer = [&](const QCommandLineOption& o, long long min, long long current) {
    if (!parser.isSet(o)) return current;
    bool ok = false;
    const long long v = parser.value(o).toLongLong(&ok);
    if ((!ok || v < min) && bad_option.isEmpty()) bad_option = QStringLiteral("--%1 needs a whole number >= %2").arg(o.names().front()).arg(min);
    return ok && v >= min ? v : current;
  };
  options.processes = int(std::min(integer(processes, 1, window.setup_panel()->processes()), 256LL));
  options.hostfile = parser.isSet(hostfile) ? parser.value(hostfile) : window.setup_panel()->hostfile();
  if (parser.isSet(hostfile) && !QFileInfo(options.hostfile).isFile())
    return usage_error(QStringLiteral("--hostfile: no such file: %1").arg(options.hostfile));
  if (options.processes < 2) options.hostfile.clear();
  // Across processes the reference experiment keeps the devices each process gets.
  if (parser.isSet(reference))
    c = mb::reference_config(c, options.processes > 1 ? c.devices : window.setup_panel()->all_devices().toStdString());
  if (parser.isSet(devices)) {
    try {
      mb::parse_devices(parser.value(devices).toStdString());
    } catch (const mb::Error& e) {
      return usage_error(QString::fromStdString(e.what()));
    }
    c.devices = parser.value(devices).toStdString();
  }
  c.epochs = int(integer(epochs, 1, c.epochs));
  c.batch = integer(batch, 1, c.batch);
  c.seed = static_cast<uint64_t>(integer(seed, 0, static_cast<long long>(c.seed)));
  c.limit_train = integer(limit_train, 0, c.limit_train);
  c.limit_val = integer(limit_val, 0, c.limit_val);
  if (!bad_option.isEmpty()) return usage_error(bad_option);
  if (parser.isSet(per_replica)) c.per_replica_batch = true;
  if (parser.isSet(scale_lr)) c.scale_lr = true;
  if (parser.isSet(lr)) {
    bool ok = false;
    c.lr = parser.value(lr).toDouble(&ok);
    if (!ok || !(c.lr > 0)) return usage_error("--lr needs a positive number");
  }
  if (parser.isSet(backend)) {
    // The CPU kernels: the panel offers CPU backends only, and GPU runs always use CUDA.
    const std::string b = parser.value(backend).toStdString();
    try {
      mb::resolve_backend(mb::DeviceKind::Cpu, b);
    } catch (const mb::ConfigError&) {
      return usage_error("--backend is auto, onednn or reference");
    }
    c.backend = b;
  }
  if (parser.isSet(data)) c.data_dir = parser.value(data).toStdString();
  if (parser.isSet(pace)) {
    bool ok = false;
    c.step_delay_s = parser.value(pace).toDouble(&ok);
    if (!ok || !std::isfinite(c.step_delay_s) || c.step_delay_s < 0 || c.step_delay_s > 60)
      return usage_error("--pace is 0 to 60 seconds per step");
  }
  if (parser.isSet(slow_replica)) {
    // R:F as mirrorbench-cli train --slow-replica takes it; the trainer checks R against the replicas.
    const QStringList parts = parser.value(slow_replica).split(':');
    bool rank_ok = false, factor_ok = false;
    const int rank = parts.size() == 2 ? parts[0].toInt(&rank_ok) : -1;
    const double factor = parts.size() == 2 ? parts[1].toDouble(&factor_ok) : 0;
    if (!rank_ok || rank < 0 || !factor_ok || !(factor >= 1 && factor <= 100))
      return usage_error("--slow-replica is R:F, a replica number and a factor in 1..100 (e.g. 1:3)");
    c.slow_replica = rank;
    c.slow_factor = factor;
  }
  options.export_png = parser.value(export_png);
  options.export_csv = parser.value(export_csv);
  options.export_json = parser.value(export_json);
  options.export_step = parser.value(export_step);
  options.screenshot = parser.value(screenshot);
  options.calibrate = parser.isSet(calibrate);
  options.show_insight = parser.isSet(insight);
  options.export_insight = parser.value(export_insight);
  options.export_predictions = parser.value(export_predictions);
  if (parser.isSet(export_size)) {
    options.export_size = mb::parse_size(parser.value(export_size));
    if (!options.export_size.isValid()) return usage_error("--export-size is WIDTHxHEIGHT, e.g. 1600x1000");
    options.step_size = options.export_size;
  }
  options.quit = parser.isSet(quit);

  window.show();
  (new mb::ScriptRunner(&window, options))->start();   // owned by the window
  return QApplication::exec();
}

// The workbench's command line (see command_line.h).
#include "command_line.h"

#include <QFileInfo>

#include <algorithm>
#include <cstdio>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "backends/registry.h"
#include "config/option_text.h"
#include "config/train_options.h"
#include "export/exporter.h"
#include "options/train_flags.h"
#include "sweep/sweep_panel.h"
#include "util/error.h"
#include "util/system_info.h"

namespace mb {
namespace {

struct Flags {
  bool run = false, compare = false, reference = false, sweep = false;
  std::string batches, models, links, remedies, target, size, hostfile;
  int processes = 0;
  std::string export_png, export_insight, export_predictions, export_csv, export_json, export_step, screenshot;
  bool calibrate = false, insight = false, quit = false, version = false;
};

void add_flags(CLI::App& app, Flags& f, TrainConfig& train) {
  app.name("mirrorbench");
  app.description("Data-parallel (mirrored) CNN training workbench. Scripted use drives the real window; with the "
                  "offscreen platform (QT_QPA_PLATFORM=offscreen) it needs no display.");
  app.allow_extras();   // Qt's own options; checked once QApplication has taken them
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-v,--version", f.version, "Print the version and the enabled components.");
  app.add_flag("--run", f.run, "Start one run with the configuration below.");
  app.add_flag("--compare", f.compare, "Run one device (the baseline), then --devices.");
  app.add_flag("--reference", f.reference,
               "The reference experiment: 5 epochs, batch 128, one device vs --devices (other options given "
               "explicitly override the preset).");
  app.add_flag("--sweep", f.sweep,
               "The sweep: every --batches size with and without linear learning-rate scaling on --devices, and the "
               "time to reach --target validation accuracy; or each of --models or --links on 1 to N replicas of "
               "--devices, and its speed-up over one; or each of --remedies on --devices (with its accuracy).");
  app.add_option("--batches", f.batches, "Sweep: global batch sizes (default 64,128,256,512,1024).")->type_name("B,B,...");
  app.add_option("--models", f.models, "Sweep the model instead, e.g. reference,dense:1024,dense:4096.")
      ->type_name("M,M,...");
  app.add_option("--links", f.links, "Sweep a simulated link instead (CPU replicas), e.g. off,100:3,10:25,1:50.")
      ->type_name("L,L,...");
  app.add_option("--remedies", f.remedies,
                 "Sweep remedies for communication instead, e.g. accumulate:8,bf16,bucket:25 ('+' joins several).")
      ->type_name("R,R,...");
  app.add_option("--target", f.target, "Sweep: the validation accuracy to reach (default 0.85).")->type_name("ACC");
  options::add_train_flags(app, train);
  app.add_option("--processes", f.processes,
                 "Run as N processes under mpirun, each with --devices (cuda:local: one GPU each); 1: in this process.")
      ->check(CLI::Range(1, 256))
      ->type_name("N");
  app.add_option("--hostfile", f.hostfile,
                 "Open MPI hostfile for --processes: the hosts to run on (default: this machine, shared memory and "
                 "loopback only).")
      ->type_name("FILE");
  app.add_flag("--calibrate", f.calibrate, "Calibrate this machine for the scaling predictor first (under a minute).");
  app.add_flag("--insight", f.insight, "Show \"Where the time goes\" (for --screenshot).");
  app.add_option("--export-insight", f.export_insight, "Write \"Where the time goes\" as one PNG when done.")->type_name("FILE");
  app.add_option("--export-predictions", f.export_predictions,
                 "Write the scaling predictions for the run on display (.json, else CSV).")->type_name("FILE");
  app.add_option("--export-png", f.export_png, "Write all charts as one PNG when done.")->type_name("FILE");
  app.add_option("--export-size", f.size, "PNG size, WIDTHxHEIGHT (default 1600x1000).")->type_name("SIZE");
  app.add_option("--export-csv", f.export_csv,
                 "Write the runs' per-epoch data as CSV (the runs of this invocation, else the latest; --sweep: the "
                 "sweep's table).")->type_name("FILE");
  app.add_option("--export-json", f.export_json, "--sweep: write the sweep as JSON.")->type_name("FILE");
  app.add_option("--export-step", f.export_step,
                 "Write the One step view (the last step shown) as a PNG (default 1920x1080).")->type_name("FILE");
  app.add_option("--screenshot", f.screenshot, "Write a screenshot of the window when done.")->type_name("FILE");
  app.add_flag("--quit", f.quit, "Exit when done (status 0 on success).");
  app.footer("Exit status in scripted mode: 0 all runs completed and exports written, 1 a run failed or was stopped, "
             "2 bad command line, 3 an export could not be written.");
}

QString q(const std::string& s) { return QString::fromStdString(s); }

// Qt's own command-line options (QGuiApplication's and QApplication's documentation), with
// one or two dashes, "-name value" or "-name=value": QApplication takes them out of argv.
bool is_qt_option(const std::string& arg, bool* takes_value) {
  static const char* const with_value[] = {"platform", "platformpluginpath", "platformtheme", "plugin",
                                           "qmljsdebugger", "qwindowgeometry", "geometry", "qwindowicon", "icon",
                                           "qwindowtitle", "title", "session", "style", "stylesheet", "display",
                                           "name", "dialogs", "fontengine"};
  static const char* const flags[] = {"reverse", "widgetcount", "nograb", "dograb", "sync", "testability"};
  if (arg.size() < 2 || arg[0] != '-') return false;
  std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
  const auto eq = name.find('=');
  const bool inline_value = eq != std::string::npos;
  name = name.substr(0, eq);
  for (const char* o : with_value)
    if (name == o) return *takes_value = !inline_value, true;
  for (const char* o : flags)
    if (name == o) return *takes_value = false, true;
  return false;
}

// What CLI11 did not know must be Qt's (and its values), or it is a mistake: said before any
// display is needed.
void check_unknown(const std::vector<std::string>& unknown) {
  for (std::size_t i = 0; i < unknown.size(); ++i) {
    bool takes_value = false;
    MB_CHECK(is_qt_option(unknown[i], &takes_value), ConfigError, "unknown option or argument '{}'", unknown[i]);
    if (takes_value) ++i;
  }
}

void fill_script(const Flags& f, const CLI::App& app, const TrainConfig& train, ScriptOptions& o) {
  MB_CHECK(int(f.run) + int(f.compare) + int(f.reference) + int(f.sweep) <= 1, ConfigError,
           "choose one of --run, --compare, --reference, --sweep");
  MB_CHECK(f.sweep || (f.batches.empty() && f.models.empty() && f.links.empty() && f.remedies.empty() &&
                       f.target.empty() && f.export_json.empty()),
           ConfigError, "--batches, --models, --links, --remedies, --target and --export-json belong to --sweep");
  MB_CHECK(int(!f.batches.empty()) + int(!f.models.empty()) + int(!f.links.empty()) + int(!f.remedies.empty()) <= 1,
           ConfigError, "sweep one thing: give one of --batches, --models, --links and --remedies");
  o.start = f.run || f.compare || f.reference || f.sweep;
  o.kind = f.compare ? PlanKind::Compare : f.reference ? PlanKind::Reference : f.sweep ? PlanKind::Sweep : PlanKind::Single;
  if (f.sweep) {
    SweepSettings sweep;
    if (!f.batches.empty()) {
      QString problem;
      sweep.axis = SweepAxis::Batch;
      sweep.batches = parse_batches(q(f.batches), &problem);
      MB_CHECK(problem.isEmpty(), ConfigError, "--batches: {}", problem.toStdString());
    }
    if (!f.models.empty()) sweep.axis = SweepAxis::Model, sweep.models = parse_sweep_models(f.models);
    if (!f.links.empty()) sweep.axis = SweepAxis::Link, sweep.links = parse_sweep_links(f.links);
    if (!f.remedies.empty()) sweep.axis = SweepAxis::Remedy, sweep.remedies = parse_sweep_remedies(f.remedies);
    if (!f.target.empty()) sweep.target = parse_real_option("--target", f.target, 0, 1, true);
    o.sweep = sweep;
  }
  o.given = train;
  for (const TrainOption& option : train_options())
    if (!option.flag.empty() && app.get_option(std::string(option.flag))->count() > 0) o.given_keys.emplace_back(option.key);
  if (f.processes > 0) o.processes = f.processes;
  if (!f.hostfile.empty()) {
    MB_CHECK(QFileInfo(q(f.hostfile)).isFile(), ConfigError, "--hostfile: no such file: {}", f.hostfile);
    o.hostfile = q(f.hostfile);
  }
  o.export_png = q(f.export_png), o.export_csv = q(f.export_csv), o.export_json = q(f.export_json);
  o.export_step = q(f.export_step), o.screenshot = q(f.screenshot);
  o.export_insight = q(f.export_insight), o.export_predictions = q(f.export_predictions);
  o.calibrate = f.calibrate, o.show_insight = f.insight, o.quit = f.quit;
  if (!f.size.empty()) {
    o.export_size = parse_size(q(f.size));
    MB_CHECK(o.export_size.isValid(), ConfigError, "--export-size is WIDTHxHEIGHT, e.g. 1600x1000");
    o.step_size = o.export_size;
  }
}

}  // namespace

GuiCommandLine parse_gui_command_line(int argc, char** argv) {
  GuiCommandLine out;
  CLI::App app;
  Flags f;
  TrainConfig train;
  add_flags(app, f, train);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    out.done = true;
    return out;
  } catch (const CLI::ParseError& e) {
    throw ConfigError(e.what());
  }
  if (f.version) {
    std::printf("mirrorbench %s\ncomponents: %s; %s\n", version().c_str(), components_summary().c_str(),
                mpi_summary().c_str());
    out.done = true;
    return out;
  }
  fill_script(f, app, train, out.script);
  check_unknown(app.remaining());
  out.scripted = out.script.start || !out.script.export_png.isEmpty() || !out.script.export_csv.isEmpty() ||
                 !out.script.export_json.isEmpty() || !out.script.export_step.isEmpty() ||
                 !out.script.screenshot.isEmpty() || out.script.calibrate || !out.script.export_insight.isEmpty() ||
                 !out.script.export_predictions.isEmpty() || out.script.quit;
  return out;
}

}  // namespace mb

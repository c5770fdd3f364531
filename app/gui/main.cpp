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

#include <cstdio>

#include "app/main_window.h"
#include "app/script_runner.h"
#include "command_line.h"
#include "util/error.h"
#include "util/system_info.h"

namespace {

int usage_error(const std::string& message) {
  std::fprintf(stderr, "mirrorbench: %s\n(see mirrorbench --help)\n", message.c_str());
  return mb::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  mb::GuiCommandLine command_line;
  try {
    command_line = mb::parse_gui_command_line(argc, argv);   // before any display is needed
  } catch (const mb::Error& e) {
    return usage_error(e.what());
  }
  if (command_line.done) return 0;

  QApplication app(argc, argv);   // takes Qt's own options out of argv
  QApplication::setApplicationName("mirrorbench");
  QApplication::setOrganizationName("mirrorbench");
  QApplication::setApplicationVersion(QString::fromStdString(mb::version()));
  QApplication::setDesktopFileName("mirrorbench");

  mb::MainWindow window;
  window.show();
  if (command_line.scripted) (new mb::ScriptRunner(&window, command_line.script))->start();   // owned by the window
  return QApplication::exec();
}
